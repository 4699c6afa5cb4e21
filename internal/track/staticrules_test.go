package track

import (
	"slices"
	"strings"
	"testing"
)

func TestStaticRulesResolve(t *testing.T) {
	all := StaticRuleIDs()
	logDefault := DefaultStaticRules("log")
	if len(logDefault) >= len(all) || slices.Contains(logDefault, "val-data") || !slices.Contains(logDefault, "clock-patch") {
		t.Fatalf("log default %v", logDefault)
	}
	cases := []struct {
		contract string
		entries  []string
		want     []string
	}{
		{"harness", nil, all},
		{"log", nil, logDefault},
		{"harness", []string{"network", "clock-patch"}, []string{"clock-patch", "network"}},
		{"log", []string{"default", "compile-options"}, append([]string{"compile-options"}, logDefault...)},
		{"harness", []string{"-subprocess"}, slices.DeleteFunc(StaticRuleIDs(), func(s string) bool { return s == "subprocess" })},
		{"harness", []string{"default", "-network", "-subprocess"}, slices.DeleteFunc(StaticRuleIDs(), func(s string) bool { return s == "subprocess" || s == "network" })},
		{"harness", []string{"none"}, nil},
	}
	for _, c := range cases {
		got, errs := resolveStaticRules(c.contract, c.entries)
		if errs != nil {
			t.Fatalf("%v: %v", c.entries, errs)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %v: got %v, want %v", c.contract, c.entries, got, c.want)
		}
	}
}

func TestStaticRulesErrors(t *testing.T) {
	good := string(readGood(t))
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown", "verification:\n  static_rules: [network, no-such-rule]\n",
			[]string{"track.yaml:27:27: verification.static_rules[1]", `"no-such-rule": unknown static rule`, "compile-options, val-data"}},
		{"unknown block list", "verification:\n  static_rules:\n    - network\n    - -sockets\n",
			[]string{"track.yaml:29:7: verification.static_rules[1]", `"-sockets": unknown static rule`}},
		{"duplicate", "verification:\n  static_rules: [network, network]\n", []string{"verification.static_rules[1]", "listed twice"}},
		{"none with others", "verification:\n  static_rules: [none, network]\n", []string{"verification.static_rules[0]", "cannot be combined"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("track.yaml", []byte(good+c.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	s, err := Parse("track.yaml", []byte(good+"contract: log\nverification:\n  static_rules: [default, -network, compile-options]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := s.StaticRules()
	if slices.Contains(got, "network") || !slices.Contains(got, "compile-options") || slices.Contains(got, "subprocess") {
		t.Fatalf("rules %v", got)
	}
}
