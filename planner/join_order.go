package planner

import (
	"math"
	"math/bits"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
)

// Cost-based ordering of one join cluster (relations joined by inner and cross joins, see
// ReorderJoins).
//
// The cluster is a graph: relations (each with the conditions that read only it, and its
// estimated rows after them), equivalence classes of columns that equality conditions make
// equal (so that a = b AND b = c also joins a with c directly), and the remaining conditions
// over several relations. The estimated rows of a set S of relations depend on S alone:
//
//	|S| = Π |R| (R in S) × Π over classes (1 / every distinct count of the class in S but the
//	      smallest) × Π selectivity of the other conditions within S
//
// which for two relations is the textbook |L|·|R| / max(ndv_l, ndv_r). Sets of up to
// maxDPRelations relations are enumerated by dynamic programming over connected subsets (every
// split of a connected set into two connected halves linked by a condition), so no order
// joins two sets that share no equality while another order exists; larger clusters are
// ordered greedily. The cost of a plan is the sum over its joins of the rows produced, the
// rows probed and buildCostFactor times the rows built; the build (right) side of each join is
// the half estimated smaller.

// maxDPRelations bounds the clusters ordered by dynamic programming, which examines about 3^n
// splits; larger clusters are ordered greedily.
const maxDPRelations = 10

// buildCostFactor weighs a row put into a hash table against a row probed or produced: a hash
// join materializes and hashes its whole right side before probing with the left partitions.
const buildCostFactor = 2

// relSet is a set of relations of a cluster, by index.
type relSet []uint64

func newRelSet(n int) relSet    { return make(relSet, (n+63)/64) }
func (s relSet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }
func (s relSet) add(i int)      { s[i/64] |= 1 << (i % 64) }
func (s relSet) clone() relSet  { return append(relSet(nil), s...) }
func maskSet(m uint64) relSet   { return relSet{m} }
func (s relSet) containsAll(t relSet) bool {
	for i := range t {
		if t[i]&^s[i] != 0 {
			return false
		}
	}
	return true
}

func (s relSet) intersects(t relSet) bool {
	for i := range t {
		if t[i]&s[i] != 0 {
			return true
		}
	}
	return false
}

func (s relSet) union(t relSet) relSet {
	out := s.clone()
	for i := range t {
		out[i] |= t[i]
	}
	return out
}

// classMember is a column of one relation in an equivalence class.
type classMember struct {
	rel int
	ref *ColumnRef
}

// eqClass is a set of columns (of one type, so that equality among them is transitive) that
// equality conditions make equal.
type eqClass struct {
	members []classMember
	rels    relSet
	// ndv holds, in relation order, each member relation's distinct count of the class's value
	// (its smallest over its members, see classNDV).
	ndv []relNDV
}

type relNDV struct {
	rel int
	ndv float64
}

// graphCond is a condition over several relations that no class absorbed.
type graphCond struct {
	expr Expr
	rels relSet
	sel  float64
	// hashable marks an equality whose sides read the disjoint relation sets left and right:
	// it joins a set holding left with one holding right by hash.
	hashable    bool
	left, right relSet
	// implied are the filters derived from the condition (impliedFilters), by relation; they
	// already narrowed their relations, so the condition's selectivity excludes theirs.
	implied map[int]Expr
}

type joinGraph struct {
	n       int
	rels    []Plan    // each with its own conditions applied
	rows    []float64 // estimated rows of each
	cols    []map[ColumnID]colEst
	classes []*eqClass
	conds   []*graphCond
	scratch [][]payment // card's divisors by relation
}

// newJoinGraph builds the graph of rels, each filtered by its own conditions (c.local), and the
// conditions over several of them (c.multi). Equalities between two columns of one type in
// different relations become classes; a class holding two columns of one relation adds their
// equality to that relation's conditions.
func newJoinGraph(est *estimator, rels []Plan, c clusterSplit) *joinGraph {
	local, owner := c.local, c.owner
	g := &joinGraph{n: len(rels), scratch: make([][]payment, len(rels))}
	setOf := func(m map[int]bool) relSet {
		s := newRelSet(g.n)
		for i := range m {
			s.add(i)
		}
		return s
	}
	// Union-find over the columns of class equalities.
	parent := map[ColumnID]ColumnID{}
	refs := map[ColumnID]*ColumnRef{}
	find := func(x ColumnID) ColumnID {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	var order []ColumnID
	for k, e := range c.multi {
		a, b, ok := classEquality(e, owner)
		if !ok {
			gc := &graphCond{expr: e, rels: setOf(c.multiRels[k]), implied: c.implied[k]}
			if call, isCall := e.(*Call); isCall && call.Func == "=" && len(call.Args) == 2 {
				l, r := setOf(relsReadBy(call.Args[0], owner)), setOf(relsReadBy(call.Args[1], owner))
				if !isConstant(call.Args[0]) && !isConstant(call.Args[1]) && !l.intersects(r) {
					gc.hashable, gc.left, gc.right = true, l, r
				}
			}
			g.conds = append(g.conds, gc)
			continue
		}
		for _, ref := range []*ColumnRef{a, b} {
			if _, seen := parent[ref.ID]; !seen {
				parent[ref.ID], refs[ref.ID] = ref.ID, ref
				order = append(order, ref.ID)
			}
		}
		parent[find(a.ID)] = find(b.ID)
	}
	byRoot := map[ColumnID]*eqClass{}
	for _, id := range order {
		root := find(id)
		cl := byRoot[root]
		if cl == nil {
			cl = &eqClass{rels: newRelSet(g.n)}
			byRoot[root] = cl
			g.classes = append(g.classes, cl)
		}
		m := classMember{rel: owner[id], ref: refs[id]}
		for _, o := range cl.members {
			if o.rel == m.rel {
				// Two columns of one relation in a class: their equality filters that relation.
				local[m.rel] = append(local[m.rel], eq(o.ref, m.ref))
				break
			}
		}
		cl.members = append(cl.members, m)
		cl.rels.add(m.rel)
	}
	for i, r := range rels {
		r = wrapFilter(r, local[i])
		e := est.estimate(r)
		g.rels = append(g.rels, r)
		g.rows = append(g.rows, e.rows)
		g.cols = append(g.cols, e.cols)
	}
	for _, cl := range g.classes {
		g.classNDV(cl)
	}
	for _, gc := range g.conds {
		gc.sel = g.condSel(gc)
	}
	return g
}

// classEquality recognizes a = b between columns of one type of two different relations.
func classEquality(e Expr, owner map[ColumnID]int) (*ColumnRef, *ColumnRef, bool) {
	call, ok := e.(*Call)
	if !ok || call.Func != "=" || len(call.Args) != 2 {
		return nil, nil, false
	}
	a, ok1 := call.Args[0].(*ColumnRef)
	b, ok2 := call.Args[1].(*ColumnRef)
	if !ok1 || !ok2 || !arrow.TypeEqual(a.T, b.T) {
		return nil, nil, false
	}
	ra, oka := owner[a.ID]
	rb, okb := owner[b.ID]
	return a, b, oka && okb && ra != rb
}

func eq(a, b *ColumnRef) Expr {
	return &Call{Func: "=", Args: []Expr{a, b}, T: arrow.FixedWidthTypes.Boolean}
}

// relsReadBy is the set of cluster relations e reads.
func relsReadBy(e Expr, owner map[ColumnID]int) map[int]bool {
	used := map[ColumnID]bool{}
	ExprColumns(e, used)
	set := map[int]bool{}
	for id := range used {
		if i, ok := owner[id]; ok {
			set[i] = true
		}
	}
	return set
}

// classNDV sets each member relation's distinct count of the class: its smallest over its
// members, each capped by the domain of every other member (keyDistinct).
func (g *joinGraph) classNDV(cl *eqClass) {
	best := map[int]float64{}
	for _, m := range cl.members {
		c, ok := g.cols[m.rel][m.ref.ID]
		if !ok {
			c = colEst{distinct: g.rows[m.rel], domain: g.rows[m.rel]}
		}
		ndv := c.distinct
		for _, o := range cl.members {
			if oc, ok := g.cols[o.rel][o.ref.ID]; ok && o.rel != m.rel {
				ndv = math.Min(ndv, keyDistinct(c, oc))
			}
		}
		ndv = math.Max(ndv, 1)
		if cur, ok := best[m.rel]; !ok || ndv < cur {
			best[m.rel] = ndv
		}
	}
	for i := 0; i < g.n; i++ {
		if v, ok := best[i]; ok {
			cl.ndv = append(cl.ndv, relNDV{rel: i, ndv: v})
		}
	}
}

// condSel is the selectivity of a condition over several relations: an equality of
// expressions that hashing can join counts as a key join of its larger side; anything else
// by the usual rules over the columns of the relations it reads.
func (g *joinGraph) condSel(c *graphCond) float64 {
	merged := relEst{rows: 1, cols: map[ColumnID]colEst{}}
	for i := 0; i < g.n; i++ {
		if c.rels.has(i) {
			merged.rows *= g.rows[i]
			for id, ce := range g.cols[i] {
				merged.cols[id] = ce
			}
		}
	}
	if call, ok := c.expr.(*Call); ok && c.hashable {
		_, ok1 := call.Args[0].(*ColumnRef)
		_, ok2 := call.Args[1].(*ColumnRef)
		if !ok1 || !ok2 {
			widest := 1.0
			for i := 0; i < g.n; i++ {
				if c.rels.has(i) {
					widest = math.Max(widest, g.rows[i])
				}
			}
			return 1 / widest
		}
	}
	sel := conjunctionSel(c.expr, merged)
	for i := 0; i < g.n; i++ {
		if f, ok := c.implied[i]; ok {
			sel /= conjunctionSel(f, relEst{rows: g.rows[i], cols: g.cols[i]})
		}
	}
	return math.Min(sel, 1)
}

// card is the estimated rows of joining the relations of s. Each class present in two or more
// relations divides by the distinct counts of all of them but one: the smallest, and among
// equal counts that of the relation with more rows (the side that references the other, in a
// key–foreign key join). A relation that pays divisors in several classes shared with one other
// relation is joined with it on a composite key, whose joint distinct count its rows bound:
// partsupp joined with lineitem on part and supplier keys matches one row per key, not the
// product of the two columns' selectivities.
func (g *joinGraph) card(s relSet) float64 {
	pays := g.scratch
	for i := range pays {
		pays[i] = pays[i][:0]
	}
	for _, cl := range g.classes {
		exempt, k := -1, 0
		present := newRelSet(g.n)
		for j, m := range cl.ndv {
			if !s.has(m.rel) {
				continue
			}
			k++
			present.add(m.rel)
			if exempt < 0 {
				exempt = j
				continue
			}
			e := cl.ndv[exempt]
			if m.ndv < e.ndv || (m.ndv == e.ndv && g.rows[m.rel] > g.rows[e.rel]) {
				exempt = j
			}
		}
		if k < 2 {
			continue
		}
		for j, m := range cl.ndv {
			if j != exempt && s.has(m.rel) {
				pays[m.rel] = append(pays[m.rel], payment{ndv: m.ndv, present: present})
			}
		}
	}
	c := 1.0
	for i := 0; i < g.n; i++ {
		if !s.has(i) {
			continue
		}
		c *= g.rows[i]
		// Group the relation's divisors by the relations their classes share besides it.
		p := pays[i]
		group := make([]int, len(p))
		for a := range p {
			group[a] = a
			for b := 0; b < a; b++ {
				if sharesOther(p[a].present, p[b].present, i) {
					old := group[a]
					for x := 0; x <= a; x++ {
						if group[x] == old {
							group[x] = group[b]
						}
					}
				}
			}
		}
		for a := range p {
			if group[a] != a {
				continue // counted with its group's first member
			}
			d := 1.0
			for b := range p {
				if group[b] == a {
					d *= p[b].ndv
				}
			}
			c /= math.Max(math.Min(d, g.rows[i]), 1)
		}
	}
	for _, cond := range g.conds {
		if s.containsAll(cond.rels) {
			c *= cond.sel
		}
	}
	return math.Max(c, 1)
}

// payment is a divisor a relation takes in card: the distinct count of one class's column.
type payment struct {
	ndv     float64
	present relSet // the class's relations in the set being estimated
}

// sharesOther reports whether a and b have a relation other than self in common.
func sharesOther(a, b relSet, self int) bool {
	for w := range a {
		common := a[w] & b[w]
		if w == self/64 {
			common &^= 1 << (self % 64)
		}
		if common != 0 {
			return true
		}
	}
	return false
}

// connected reports whether a condition joins a and b by hash: a class with members on both
// sides, or a hashable equality with one side's relations in each.
func (g *joinGraph) connected(a, b relSet) bool {
	for _, cl := range g.classes {
		if cl.rels.intersects(a) && cl.rels.intersects(b) {
			return true
		}
	}
	for _, c := range g.conds {
		if c.hashable && ((a.containsAll(c.left) && b.containsAll(c.right)) || (a.containsAll(c.right) && b.containsAll(c.left))) {
			return true
		}
	}
	return false
}

// joinTree is an ordered join: a relation (rel >= 0) or a join of left (probe) and right
// (build).
type joinTree struct {
	rel         int
	left, right *joinTree
	set         relSet
	rows        float64
}

func (g *joinGraph) leaf(i int) *joinTree {
	s := newRelSet(g.n)
	s.add(i)
	return &joinTree{rel: i, set: s, rows: g.rows[i]}
}

// joinOf joins a and b with the one estimated smaller on the build side; on a tie b builds.
func (g *joinGraph) joinOf(a, b *joinTree) *joinTree {
	if b.rows > a.rows {
		a, b = b, a
	}
	s := a.set.union(b.set)
	return &joinTree{rel: -1, left: a, right: b, set: s, rows: g.card(s)}
}

// joinCost is what one hash join costs: rows produced, probed, and built (weighted).
func joinCost(probe, build, out float64) float64 {
	return out + probe + buildCostFactor*build
}

// order returns the cluster's join tree: by dynamic programming for small clusters, greedily
// for larger ones.
func (g *joinGraph) order() *joinTree {
	if g.n <= maxDPRelations {
		return g.orderDP()
	}
	return g.orderGreedy()
}

type dpEntry struct {
	ok          bool
	cost        float64
	left, right uint64 // halves (probe, build); 0 for a single relation
}

// orderDP finds the cheapest tree over connected subsets. When the whole cluster is not
// connected by hashable conditions, its largest connected parts are joined by cross joins,
// largest first, each built on the smaller side.
func (g *joinGraph) orderDP() *joinTree {
	full := uint64(1)<<g.n - 1
	best := make([]dpEntry, full+1)
	card := make([]float64, full+1)
	for i := 0; i < g.n; i++ {
		best[1<<i] = dpEntry{ok: true}
		card[1<<i] = g.rows[i]
	}
	for s := uint64(1); s <= full; s++ {
		if bits.OnesCount64(s) < 2 {
			continue
		}
		low := s & -s
		cardKnown := false
		for s1 := (s - 1) & s; s1 > 0; s1 = (s1 - 1) & s {
			if s1&low == 0 || !best[s1].ok {
				continue
			}
			s2 := s ^ s1
			if !best[s2].ok || !g.connected(maskSet(s1), maskSet(s2)) {
				continue
			}
			if !cardKnown {
				card[s], cardKnown = g.card(maskSet(s)), true
			}
			probe, build := s1, s2
			if card[build] > card[probe] {
				probe, build = build, probe
			}
			cost := best[s1].cost + best[s2].cost + joinCost(card[probe], card[build], card[s])
			if !best[s].ok || cost < best[s].cost {
				best[s] = dpEntry{ok: true, cost: cost, left: probe, right: build}
			}
		}
	}
	var tree func(s uint64) *joinTree
	tree = func(s uint64) *joinTree {
		e := best[s]
		if e.left == 0 {
			return g.leaf(bits.TrailingZeros64(s))
		}
		return &joinTree{rel: -1, left: tree(e.left), right: tree(e.right), set: maskSet(s), rows: card[s]}
	}
	if best[full].ok {
		return tree(full)
	}
	// Not connected: take the largest connected parts (fewest rows among equals).
	var parts []*joinTree
	for rest := full; rest != 0; {
		pick := uint64(0)
		for s := rest; s > 0; s = (s - 1) & rest {
			if !best[s].ok {
				continue
			}
			if pick == 0 || bits.OnesCount64(s) > bits.OnesCount64(pick) ||
				(bits.OnesCount64(s) == bits.OnesCount64(pick) && card[s] < card[pick]) {
				pick = s
			}
		}
		parts = append(parts, tree(pick))
		rest &^= pick
	}
	return g.crossJoin(parts)
}

// crossJoin joins unconnected parts, largest first.
func (g *joinGraph) crossJoin(parts []*joinTree) *joinTree {
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].rows > parts[j].rows })
	t := parts[0]
	for _, p := range parts[1:] {
		t = g.joinOf(t, p)
	}
	return t
}

// orderGreedy builds a left-deep order: start from the relation estimated smallest, then keep
// adding the connected relation whose join is estimated smallest, and only when none is
// connected the smallest remaining one (a cross join).
func (g *joinGraph) orderGreedy() *joinTree {
	start := 0
	for i := 1; i < g.n; i++ {
		if g.rows[i] < g.rows[start] {
			start = i
		}
	}
	t := g.leaf(start)
	for joined := 1; joined < g.n; joined++ {
		best, bestRows, bestConnected := -1, 0.0, false
		for i := 0; i < g.n; i++ {
			if t.set.has(i) {
				continue
			}
			one := g.leaf(i)
			c := g.connected(t.set, one.set)
			rows := g.rows[i]
			if c {
				rows = g.card(t.set.union(one.set))
			}
			if best < 0 || (c && !bestConnected) || (c == bestConnected && rows < bestRows) {
				best, bestRows, bestConnected = i, rows, c
			}
		}
		t = g.joinOf(t, g.leaf(best))
	}
	return t
}

// build turns a join tree into joins. Each class contributes one equality to every join whose
// halves both hold members of it (members within one half are already equal), and every
// other condition sits on the lowest join that holds all its relations.
func (g *joinGraph) build(t *joinTree, placed []bool) Plan {
	if t.rel >= 0 {
		return g.rels[t.rel]
	}
	left, right := g.build(t.left, placed), g.build(t.right, placed)
	var on []Expr
	for _, cl := range g.classes {
		a, b := cl.memberIn(t.left.set), cl.memberIn(t.right.set)
		if a != nil && b != nil {
			on = append(on, eq(a, b))
		}
	}
	for k, c := range g.conds {
		if !placed[k] && t.set.containsAll(c.rels) {
			placed[k] = true
			on = append(on, c.expr)
		}
	}
	j := &Join{Left: left, Right: right, Kind: CrossJoin, Columns: append(append(Schema{}, left.Schema()...), right.Schema()...)}
	if len(on) > 0 {
		j.Kind, j.On = InnerJoin, and(on...)
	}
	return j
}

// memberIn is the class's first member (in written order) in s, nil when none.
func (cl *eqClass) memberIn(s relSet) *ColumnRef {
	for _, m := range cl.members {
		if s.has(m.rel) {
			return m.ref
		}
	}
	return nil
}
