package yamlfile

import (
	"strings"
	"testing"
	"time"
)

type dur time.Duration

func (d *dur) UnmarshalText(b []byte) error { return nil }

type inner struct {
	A int     `yaml:"a"`
	F float64 `yaml:"f"`
}

type doc struct {
	Name   string           `yaml:"name"`
	Items  []inner          `yaml:"items"`
	ByName map[string]inner `yaml:"by_name"`
	Wait   dur              `yaml:"wait"`
	Ptr    *inner           `yaml:"ptr"`
	Skip   string           `yaml:"-"`
}

func TestInspect(t *testing.T) {
	src := "name: x\nitems:\n  - {a: 15.9, f: 1.5}\n  - b: 2\nby_name:\n  any: {a: 1, c: 3}\nwait: 3s\nptr:\n  d: 4\nSkip: y\n"
	errs := Inspect("f.yaml", []byte(src), &doc{})
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		"f.yaml:3:9: items[0].a: 15.9: want a whole number",
		"f.yaml:4:5: items[1].b: unknown key (the keys under items[1]: a, f)",
		"f.yaml:6:15: by_name.any.c: unknown key (the keys under by_name.any: a, f)",
		"f.yaml:9:3: ptr.d: unknown key (the keys under ptr: a, f)",
		"f.yaml:10:1: Skip: unknown key (the keys here: name, items, by_name, wait, ptr)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if errs := Inspect("f.yaml", []byte("name: [unclosed"), &doc{}); errs != nil {
		t.Errorf("a syntax error gave unknown keys: %v", errs)
	}
}
