// Package report renders the static report of an evolution run: an HTML
// page readable without JavaScript or network access, the paper's figures
// as SVG and PNG, a CSV of every program, and the best program with its
// diff against the reference.
//
// The package knows nothing about the database. A caller fills a Data
// value (plain, JSON-tagged data) and calls Write; docs/report.md explains
// what each part of the report shows.
package report
