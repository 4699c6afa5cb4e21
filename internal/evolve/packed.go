package evolve

import (
	"encoding/hex"
	"time"

	"github.com/frontier-bench/frontier/internal/runs"
	"github.com/frontier-bench/frontier/internal/store"
)

// A settled member (its final verdict recorded: nothing changes it any
// more) is kept packed: a fixed-size record without pointers, its texts in
// one shared byte arena, its words (origin, state, verdict, stage, model,
// template) as indexes into a small table, its SHA-256 hashes as bytes.
// The garbage collector does not scan such records: at 100,000 members
// whole records, each with a dozen pointers, made the collector's marking
// the part of the engine's work per child that grew with the population.
// What ranking and drawing read (verdict rank, objective value, island,
// flags) is in the record itself; the rest is decoded on demand.

// Texts of a packed member, in the order they lie in the arena.
const (
	textDescription = iota
	textIdea
	textReason
	textError
	textSummary
	textProgramHash // only when not a lowercase hex SHA-256
	textNormHash    // likewise
	nTexts
)

// Flags of a packed member.
const (
	flagProgram    uint8 = 1 << iota // holdsProgram
	flagCopy                         // Origin.IsCopy
	flagValid                        // Verdict.Valid
	flagProgramHex                   // programHash holds ProgramHash
	flagNormHex                      // normHash holds NormHash
)

// Words of a packed member.
const (
	wordOrigin = iota
	wordState
	wordVerdict
	wordStage
	wordModel
	wordTemplate
	nWords
)

// Times of a packed member.
const (
	timeCreated = iota
	timeUpdated
	timeFinished
	nTimes
)

// packed is a settled member without pointers (see above).
type packed struct {
	id, runID, parentID, sourceID  int64
	fastEvaluationID, evaluationID int64
	inputTokens, outputTokens      int64
	seed                           uint64
	iteration, slot, island, fixes int64
	valLoss, trainTimeMs           float64
	stepAvgMs, score, costUSD      float64
	// value is objectiveValue for the population's objective and rank
	// verdictRank: with id, the member's rankKey.
	value float64
	rank  int32
	words [nWords]uint32
	// sec, nsec and loc are each time's Unix seconds and nanoseconds and
	// its location (an index into population.locs); the monotonic clock
	// reading is not kept (the store does not keep it either).
	sec                   [nTimes]int64
	nsec                  [nTimes]int32
	loc                   [nTimes]uint8
	flags                 uint8
	programHash, normHash [32]byte
	// text is where the member's texts start in the arena; lens their
	// lengths, in the order of the text constants.
	text uint64
	lens [nTexts]uint32
}

// key is the member's position in the ranking (rankKey).
func (m *packed) key() key { return key{rank: int(m.rank), value: m.value, id: m.id} }

// packing holds what packed members share: the arena of their texts, the
// table of their words and the locations of their times.
type packing struct {
	arena  []byte
	words  []string
	wordOf map[string]uint32
	locs   []*time.Location
}

func newPacking() packing {
	// Location 0 is UTC, 1 Local; word 0 is "".
	return packing{words: []string{""}, wordOf: map[string]uint32{"": 0}, locs: []*time.Location{time.UTC, time.Local}}
}

// word interns s.
func (k *packing) word(s string) uint32 {
	if i, ok := k.wordOf[s]; ok {
		return i
	}
	i := uint32(len(k.words))
	k.words = append(k.words, s)
	k.wordOf[s] = i
	return i
}

// location interns l.
func (k *packing) location(l *time.Location) uint8 {
	for i, x := range k.locs {
		if x == l {
			return uint8(i)
		}
	}
	if len(k.locs) == 256 {
		// The times of a run come from the clock and the store (UTC and
		// Local): a 257th zone keeps its instant, in UTC.
		return 0
	}
	k.locs = append(k.locs, l)
	return uint8(len(k.locs) - 1)
}

// hexHash decodes a lowercase hex SHA-256; ok is false for anything else
// (which the arena keeps as it is).
func hexHash(s string) (h [32]byte, ok bool) {
	if len(s) != 64 {
		return h, false
	}
	// Decoded here, not by hex.Decode: its []byte(s) allocated 64 bytes on
	// every dedup lookup and settle.
	for i := range h {
		hi, ok1 := nibble(s[2*i])
		lo, ok2 := nibble(s[2*i+1])
		if !ok1 || !ok2 {
			return [32]byte{}, false
		}
		h[i] = hi<<4 | lo
	}
	return h, true
}

// nibble is the value of a lower-case hex digit.
func nibble(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// pack encodes c, whose rank key for objective is k.
func (k *packing) pack(c *store.Child, objective string) packed {
	m := packed{
		id: c.ID, runID: c.RunID, parentID: c.ParentID, sourceID: c.SourceID,
		fastEvaluationID: c.FastEvaluationID, evaluationID: c.EvaluationID,
		inputTokens: c.InputTokens, outputTokens: c.OutputTokens, seed: c.Seed,
		iteration: int64(c.Iteration), slot: int64(c.Slot), island: int64(c.Island), fixes: int64(c.FixAttempts),
		valLoss: c.ValLoss, trainTimeMs: c.TrainTimeMs, stepAvgMs: c.StepAvgMs, score: c.Score, costUSD: c.CostUSD,
	}
	rk := rankKey(objective, c)
	m.rank, m.value = int32(rk.rank), rk.value
	m.words = [nWords]uint32{k.word(string(c.Origin)), k.word(string(c.State)), k.word(string(c.Verdict)),
		k.word(string(c.Stage)), k.word(c.Model), k.word(c.Template)}
	k.stamp(&m, c)
	if holdsProgram(c) {
		m.flags |= flagProgram
	}
	if c.Origin.IsCopy() {
		m.flags |= flagCopy
	}
	if c.Verdict.Valid() {
		m.flags |= flagValid
	}
	texts := [nTexts]string{c.Description, c.Idea, c.Reason, c.Error, c.Summary}
	if h, ok := hexHash(c.ProgramHash); ok {
		m.programHash, m.flags = h, m.flags|flagProgramHex
	} else {
		texts[textProgramHash] = c.ProgramHash
	}
	if h, ok := hexHash(c.NormHash); ok {
		m.normHash, m.flags = h, m.flags|flagNormHex
	} else {
		texts[textNormHash] = c.NormHash
	}
	m.text = uint64(len(k.arena))
	for i, s := range texts {
		if uint64(len(s)) > 1<<32-1 {
			// The engine clips what it keeps of errors and summaries to
			// kilobytes: a text of 4 GiB cannot reach a member.
			s = s[:1<<32-1]
		}
		m.lens[i] = uint32(len(s))
		k.arena = append(k.arena, s...)
	}
	return m
}

// stamp encodes c's times into m.
func (k *packing) stamp(m *packed, c *store.Child) {
	for i, t := range [nTimes]time.Time{c.CreatedAt, c.UpdatedAt, c.FinishedAt} {
		m.sec[i], m.nsec[i], m.loc[i] = t.Unix(), int32(t.Nanosecond()), k.location(t.Location())
	}
}

// unpack decodes m: a new record, equal field for field to the one packed
// (times without their monotonic clock reading).
func (k *packing) unpack(m *packed) *store.Child {
	var texts [nTexts]string
	off := m.text
	for i, n := range m.lens {
		if n > 0 {
			texts[i] = string(k.arena[off : off+uint64(n)])
			off += uint64(n)
		}
	}
	var times [nTimes]time.Time
	for i := range times {
		t := time.Unix(m.sec[i], int64(m.nsec[i]))
		switch l := m.loc[i]; l {
		case 0:
			t = t.UTC()
		case 1: // time.Unix's own
		default:
			t = t.In(k.locs[l])
		}
		times[i] = t
	}
	c := &store.Child{
		ID: m.id, RunID: m.runID, Iteration: int(m.iteration), Slot: int(m.slot), Island: int(m.island), ParentID: m.parentID,
		Origin: runs.Origin(k.words[m.words[wordOrigin]]), SourceID: m.sourceID, Model: k.words[m.words[wordModel]],
		Stage: runs.Stage(k.words[m.words[wordStage]]), Template: k.words[m.words[wordTemplate]], Seed: m.seed,
		State: runs.State(k.words[m.words[wordState]]), ProgramHash: texts[textProgramHash], NormHash: texts[textNormHash],
		Description: texts[textDescription], Idea: texts[textIdea], FixAttempts: int(m.fixes),
		Verdict: runs.Verdict(k.words[m.words[wordVerdict]]), Reason: texts[textReason], Error: texts[textError],
		FastEvaluationID: m.fastEvaluationID, EvaluationID: m.evaluationID, ValLoss: m.valLoss, TrainTimeMs: m.trainTimeMs,
		StepAvgMs: m.stepAvgMs, Score: m.score, Summary: texts[textSummary], InputTokens: m.inputTokens,
		OutputTokens: m.outputTokens, CostUSD: m.costUSD,
		CreatedAt: times[timeCreated], UpdatedAt: times[timeUpdated], FinishedAt: times[timeFinished],
	}
	if m.flags&flagProgramHex != 0 {
		c.ProgramHash = hex.EncodeToString(m.programHash[:])
	}
	if m.flags&flagNormHex != 0 {
		c.NormHash = hex.EncodeToString(m.normHash[:])
	}
	return c
}

// text is text t of m.
func (k *packing) text(m *packed, t int) string {
	off := m.text
	for _, n := range m.lens[:t] {
		off += uint64(n)
	}
	return string(k.arena[off : off+uint64(m.lens[t])])
}
