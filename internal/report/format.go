package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
)

// dash stands for a value that was not measured or does not apply.
const dash = "–"

// secs formats milliseconds as seconds: three decimals under ten seconds
// (CPU tracks), two above (GPU records such as 172.68 s).
func secs(ms float64) string {
	if !measured(ms) {
		return dash
	}
	s := ms / 1000
	if s < 10 {
		return strconv.FormatFloat(s, 'f', 3, 64)
	}
	return strconv.FormatFloat(s, 'f', 2, 64)
}

// millis formats milliseconds with a precision that suits their size.
func millis(ms float64) string {
	if !finite(ms) || ms < 0 {
		return dash
	}
	switch {
	case ms >= 1000:
		return count(int64(math.Round(ms)))
	case ms >= 100:
		return strconv.FormatFloat(ms, 'f', 1, 64)
	case ms >= 1:
		return strconv.FormatFloat(ms, 'f', 2, 64)
	}
	return strconv.FormatFloat(ms, 'f', 3, 64)
}

// loss formats a validation or training loss.
func loss(x float64) string {
	if !measured(x) {
		return dash
	}
	return strconv.FormatFloat(x, 'f', 4, 64)
}

// general formats any other number compactly.
func general(x float64) string {
	if !finite(x) || x == 0 {
		return dash
	}
	return strconv.FormatFloat(x, 'g', 5, 64)
}

// percent formats a fraction in [0, 1] as a percentage.
func percent(frac float64) string {
	if !finite(frac) {
		return dash
	}
	return strconv.FormatFloat(frac*100, 'f', 1, 64) + "%"
}

// speedup is runs.Speedup, the one definition: the share of the
// reference's time the program saves, (ref − t) / ref. A program that
// trains in 172.68 s against 176.70 s is +2.3%.
func speedup(tMs, refMs float64) string {
	if !measured(tMs) || !measured(refMs) {
		return dash
	}
	return runs.FormatSpeedup(runs.Speedup(refMs, tMs))
}

// delta is t − ref in seconds, signed.
func delta(tMs, refMs float64) string {
	if !measured(tMs) || !measured(refMs) {
		return dash
	}
	d := (tMs - refMs) / 1000
	if math.Abs(d) < 10 {
		return fmt.Sprintf("%+.3f", d)
	}
	return fmt.Sprintf("%+.2f", d)
}

// usd formats a cost. Zero is a real value (the mutate baseline is free).
func usd(x float64) string {
	switch {
	case !finite(x) || x < 0:
		return dash
	case x == 0:
		return "$0"
	case x < 0.01:
		return "$" + strconv.FormatFloat(x, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(x, 'f', 2, 64)
}

// count formats an integer with thousands separators.
func count[T int | int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// compact formats a token count as 950, 12.3k or 4.56M.
func compact(n int64) string {
	switch {
	case n < 0:
		return dash
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	case n < 1_000_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 2, 64) + "M"
	}
	return strconv.FormatFloat(float64(n)/1e9, 'f', 2, 64) + "G"
}

// stamp formats a time for the page; zero is "–".
func stamp(t time.Time) string {
	if t.IsZero() {
		return dash
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// duration formats a wall-clock span to the second.
func duration(d time.Duration) string {
	if d <= 0 {
		return dash
	}
	return d.Round(time.Second).String()
}

// shortHash keeps the first 12 hex digits, enough to find a program.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// clip cuts s to n runes on one line for a table cell.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// plural returns "1 program" or "3 programs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return count(n) + " " + many
}
