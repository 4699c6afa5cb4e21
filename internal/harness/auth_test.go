package harness

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// signed writes a line the way the harness does with a key.
func signed(key []byte, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return body[:len(body)-1] + `,"mac":"` + hex.EncodeToString(m.Sum(nil)) + `"}`
}

func TestReadAuthenticated(t *testing.T) {
	key := []byte(strings.Repeat("ab", 32))
	run := signed(key, `{"event":"run_start","t_ms":1,"mode":"full","seq":0}`)
	final := signed(key, `{"event":"final","t_ms":9,"steps":10,"train_time_ms":100,"val_loss":3.5,"seq":1}`)
	worker := signed(key, `{"event":"error","t_ms":5,"kind":"HarnessError","code":"pretrain","message":"x","seq":0,"rank":1}`)
	forgedFinal := `{"event":"final","t_ms":9,"steps":10,"train_time_ms":1,"val_loss":2.4,"seq":2}`
	wrongKey := signed([]byte(strings.Repeat("cd", 32)), `{"event":"final","t_ms":9,"val_loss":2.4,"seq":2}`)
	for _, c := range []struct {
		name                    string
		lines                   []string
		authentic, forged, gaps int
		finalLoss               float64 // 0: no final
		errors                  int
	}{
		{"honest", []string{run, worker, final}, 3, 0, 0, 3.5, 1},
		{"forged final after the real one", []string{run, final, forgedFinal}, 2, 1, 0, 3.5, 0},
		{"forged final alone", []string{run, forgedFinal}, 1, 1, 0, 0, 0},
		{"signed with another key", []string{run, wrongKey}, 1, 1, 0, 0, 0},
		{"a middle line removed", []string{run, signed(key, `{"event":"final","t_ms":9,"val_loss":3.5,"seq":3}`)}, 2, 0, 2, 3.5, 0},
		{"a line copied", []string{run, final, final}, 2, 1, 0, 3.5, 0},
		{"mac field tampered", []string{run, strings.Replace(final, `"val_loss":3.5`, `"val_loss":2.5`, 1)}, 1, 1, 0, 0, 0},
		// The harness never loaded: the boot's setup error (no key) counts,
		// a forged final does not.
		{"setup error only", []string{`{"event":"error","t_ms":0,"kind":"ImportError","code":"setup","message":"no torch"}`, forgedFinal}, 0, 1, 0, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			tel, err := ReadAuthenticated(strings.NewReader(strings.Join(c.lines, "\n")+"\n"), key)
			if err != nil {
				t.Fatal(err)
			}
			loss := 0.0
			if tel.Final != nil {
				loss = tel.Final.ValLoss
			}
			got := fmt.Sprint(tel.Authentic, tel.Forged, tel.Gaps, loss, len(tel.Errors))
			want := fmt.Sprint(c.authentic, c.forged, c.gaps, c.finalLoss, c.errors)
			if got != want {
				t.Errorf("authentic, forged, gaps, final loss, errors = %s; want %s", got, want)
			}
		})
	}
}
