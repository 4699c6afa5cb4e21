package track

import (
	"fmt"
	"slices"
	"strings"
)

// The static rules a track may name in verification.static_rules. The ids
// live here, beside the spec that names them, so that the loader can check
// a spec without depending on the package that implements the rules
// (internal/verify, which depends on this one). Every id must have an
// implementation there; its tests check that.
var staticRuleIDs = []string{
	"compile-options",
	"val-data",
	"harness-internals",
	"introspection",
	"clock-patch",
	"network",
	"subprocess",
	"native-code",
	"write-outside",
	"dynamic-code",
}

// logExempt are the rules the "log" contract leaves out of its default
// set: unmodified speedrun scripts read the validation shard themselves,
// call nvidia-smi through subprocess for their log, and (the 2024 records)
// set torch._inductor.config.coordinate_descent_tuning.
var logExempt = []string{"compile-options", "val-data", "subprocess"}

// Special entries of verification.static_rules.
const (
	// RulesDefault stands for the default set of the track's contract.
	RulesDefault = "default"
	// RulesNone, alone, turns the static rules off.
	RulesNone = "none"
)

// StaticRuleIDs returns the id of every static rule, in the order the
// documentation lists them.
func StaticRuleIDs() []string { return slices.Clone(staticRuleIDs) }

// DefaultStaticRules returns the rules a track of the given contract runs
// when verification.static_rules is empty: all of them under "harness",
// fewer under "log".
func DefaultStaticRules(contract string) []string {
	if contract != "log" {
		return StaticRuleIDs()
	}
	var out []string
	for _, id := range staticRuleIDs {
		if !slices.Contains(logExempt, id) {
			out = append(out, id)
		}
	}
	return out
}

// StaticRules returns the ids of the static rules the track runs, in the
// documentation's order. verification.static_rules lists rule ids; the
// entry "default" adds the contract's default set, an entry "-ID" removes a
// rule, and "none" alone runs none. An empty list is the default set.
func (s *Spec) StaticRules() []string {
	rules, _ := resolveStaticRules(s.Contract, s.Verification.StaticRules)
	return rules
}

// resolveStaticRules applies the static_rules entries to the contract's
// default set. The errors are indexed by entry, for the loader.
func resolveStaticRules(contract string, entries []string) ([]string, map[int]string) {
	if len(entries) == 0 {
		return DefaultStaticRules(contract), nil
	}
	errs := map[int]string{}
	on := map[string]bool{}
	seen := map[string]int{}
	onlyRemovals := true
	for i, e := range entries {
		if first, dup := seen[e]; dup {
			errs[i] = fmt.Sprintf("%q is listed twice (first as entry %d)", e, first)
			continue
		}
		seen[e] = i
		id, remove := strings.CutPrefix(e, "-")
		switch {
		case e == RulesNone:
			if len(entries) > 1 {
				errs[i] = `"none" turns every static rule off: it cannot be combined with other entries`
			}
			onlyRemovals = false
		case e == RulesDefault:
			for _, d := range DefaultStaticRules(contract) {
				on[d] = true
			}
			onlyRemovals = false
		case !slices.Contains(staticRuleIDs, id):
			errs[i] = fmt.Sprintf("%q: unknown static rule; the rules are %s, or default, none, -RULE (see docs/static-rules.md)",
				e, strings.Join(staticRuleIDs, ", "))
		case remove:
			// applied below, after every addition
		default:
			on[id] = true
			onlyRemovals = false
		}
	}
	if onlyRemovals {
		// A list of removals only ("-subprocess") starts from the default.
		for _, d := range DefaultStaticRules(contract) {
			on[d] = true
		}
	}
	for _, e := range entries {
		if id, ok := strings.CutPrefix(e, "-"); ok {
			delete(on, id)
		}
	}
	var out []string
	for _, id := range staticRuleIDs {
		if on[id] {
			out = append(out, id)
		}
	}
	if len(errs) == 0 {
		errs = nil
	}
	return out, errs
}
