package exec

import "strings"

// FormatPlan renders an operator tree for EXPLAIN: one line per operator (its String()), each
// child indented two spaces deeper than its parent, children in Children() order. Instrumented
// nodes (see Instrument) print as the operator they wrap.
func FormatPlan(op Operator) string {
	var b strings.Builder
	writePlan(&b, op, 0, func(Operator) string { return "" })
	return b.String()
}

// writePlan writes op and its subtree, appending suffix(node) to each node's line.
func writePlan(b *strings.Builder, op Operator, depth int, suffix func(Operator) string) {
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteString(op.String())
	b.WriteString(suffix(op))
	b.WriteByte('\n')
	for _, c := range op.Children() {
		writePlan(b, c, depth+1, suffix)
	}
}
