package runner

import (
	"strconv"
	"strings"
	"time"
)

func plural(n int64, noun string) string {
	s := strconv.FormatInt(n, 10) + " " + noun
	if n != 1 {
		if strings.HasSuffix(noun, "s") {
			return s + "es"
		}
		return s + "s"
	}
	return s
}

// fmtDuration prints a duration the way a person would say it: "850ms",
// "12.3s", "2m30s".
func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}
