// Package data holds everything frontier knows about training data on disk:
// the speedrun's shard format (a 1024-byte header of little-endian int32s
// followed by uint16 tokens), verification of shards against the SHA-256
// pins of a track, and the synthetic "tiny" corpus with its exactly
// computed loss floor; fetching the speedrun's GPT-2-tokenized FineWeb
// shards from the Hugging Face hub (resumable, verified); and preparing
// shards from the user's own text with GPT-2 BPE (written in Go, offline)
// or bytes.
//
// The tiny corpus is generated with integer arithmetic only, so the same
// seed gives the same bytes on every machine and architecture; its
// Bayes-optimal loss on the evaluation windows is computed from the
// generator's own tables.
package data
