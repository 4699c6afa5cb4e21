package runview

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// MemberQuery selects and orders a page of a run's members: a run of
// 10,000 programs is shown a page at a time, filtered and sorted before it
// is cut.
type MemberQuery struct {
	// Class keeps the members of a class (runs.Class), Model, Stage and
	// Island (when IslandSet) those of one model, stage and island.
	Class     runs.Class
	Model     string
	Stage     string
	Island    int
	IslandSet bool
	// Sort is "newest" (the default: the newest member first), "oldest",
	// "time" (the fastest single timing first) or "rank" (the run's
	// ranking, the best first).
	Sort    string
	Page    int // 1 for the first
	PerPage int // default 50, at most 500
}

// MemberSorts are the orders a MemberQuery knows.
var MemberSorts = []string{"newest", "oldest", "time", "rank"}

// ParseMemberQuery reads a query from a URL's parameters (class, model,
// stage, island, sort, page, per_page); a value it cannot read is an error
// that names it.
func ParseMemberQuery(v url.Values) (MemberQuery, error) {
	q := MemberQuery{Class: runs.Class(v.Get("class")), Model: v.Get("model"), Stage: v.Get("stage"), Sort: v.Get("sort"), Page: 1, PerPage: 50}
	if q.Class != "" && !slices.Contains(runs.Classes, q.Class) {
		return q, fmt.Errorf("class %q: use one of %v", q.Class, runs.Classes)
	}
	if q.Sort == "" {
		q.Sort = "newest"
	}
	if !slices.Contains(MemberSorts, q.Sort) {
		return q, fmt.Errorf("sort %q: use one of %v", q.Sort, MemberSorts)
	}
	num := func(key string, dst *int, lo, hi int) error {
		s := v.Get(key)
		if s == "" {
			return nil
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%s %q: use a whole number from %d to %d", key, s, lo, hi)
		}
		*dst = n
		return nil
	}
	if err := num("page", &q.Page, 1, 1<<30); err != nil {
		return q, err
	}
	if err := num("per_page", &q.PerPage, 1, 500); err != nil {
		return q, err
	}
	if v.Get("island") != "" {
		q.IslandSet = true
		if err := num("island", &q.Island, 0, 1<<20); err != nil {
			return q, err
		}
	}
	return q, nil
}

// Values is the query as URL parameters, the defaults left out, with
// page set to page.
func (q MemberQuery) Values(page int) url.Values {
	v := url.Values{}
	set := func(k, x string) {
		if x != "" {
			v.Set(k, x)
		}
	}
	set("class", string(q.Class))
	set("model", q.Model)
	set("stage", q.Stage)
	if q.IslandSet {
		v.Set("island", strconv.Itoa(q.Island))
	}
	if q.Sort != "newest" {
		set("sort", q.Sort)
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if q.PerPage != 50 {
		v.Set("per_page", strconv.Itoa(q.PerPage))
	}
	return v
}

// MemberPage is a page of a run's members.
type MemberPage struct {
	Query MemberQuery
	// Total is the number of members the query selects; Pages the number
	// of pages they fill.
	Total, Pages int
	Members      []*store.Child
}

// Page selects a page of members (all of a run's, copies included) by q;
// objective ranks them for sort "rank".
func Page(members []*store.Child, objective string, q MemberQuery) MemberPage {
	var sel []*store.Child
	for _, c := range members {
		switch {
		case q.Class != "" && classOf(c) != q.Class,
			q.Model != "" && c.Model != q.Model,
			q.Stage != "" && string(c.Stage) != q.Stage,
			q.IslandSet && c.Island != q.Island:
			continue
		}
		sel = append(sel, c)
	}
	switch q.Sort {
	case "oldest":
		slices.SortFunc(sel, func(a, b *store.Child) int { return cmp.Compare(a.ID, b.ID) })
	case "time":
		slices.SortFunc(sel, func(a, b *store.Child) int {
			ta, tb := runs.Measured(a.TrainTimeMs) && a.Verdict.Valid(), runs.Measured(b.TrainTimeMs) && b.Verdict.Valid()
			switch {
			case ta != tb && ta:
				return -1
			case ta != tb:
				return 1
			case ta && a.TrainTimeMs != b.TrainTimeMs:
				return cmp.Compare(a.TrainTimeMs, b.TrainTimeMs)
			}
			return cmp.Compare(a.ID, b.ID)
		})
	case "rank":
		slices.SortFunc(sel, func(a, b *store.Child) int { return rankOrder(objective, a, b) })
	default:
		slices.SortFunc(sel, func(a, b *store.Child) int { return cmp.Compare(b.ID, a.ID) })
	}
	per := max(q.PerPage, 1)
	p := MemberPage{Query: q, Total: len(sel), Pages: max(1, (len(sel)+per-1)/per)}
	lo := min((max(q.Page, 1)-1)*per, len(sel))
	p.Members = sel[lo:min(lo+per, len(sel))]
	return p
}

// classOf is a member's class: pending until it is done.
func classOf(c *store.Child) runs.Class {
	if c.State != runs.Done {
		return runs.Pending
	}
	return runs.ClassOf(c.Verdict)
}

// ClassOf is a member's class (runs.ClassOf of its verdict once it is
// done, pending before).
func ClassOf(c *store.Child) runs.Class { return classOf(c) }
