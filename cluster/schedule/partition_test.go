package schedule

import (
	"slices"
	"testing"
)

func TestGroupTasks(t *testing.T) {
	for _, tt := range []struct {
		name              string
		bytes             []int64
		partitions, alive int
		wantGroups        int
	}{
		{"the count asked for", []int64{9, 8, 7, 6, 5, 4, 3, 2, 1}, 3, 5, 3},
		{"default: per alive node", make([]int64, 20), 0, 2, 2 * DefaultPartitionsPerNode},
		{"default with no node counts one", make([]int64, 20), 0, 0, DefaultPartitionsPerNode},
		{"never more partitions than tasks", []int64{1, 2}, 6, 3, 2},
		{"no task: one empty partition", nil, 4, 3, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			groups := GroupTasks(tt.bytes, tt.partitions, tt.alive)
			if len(groups) != tt.wantGroups {
				t.Fatalf("%d groups, want %d: %v", len(groups), tt.wantGroups, groups)
			}
			var all []int
			for _, g := range groups {
				var sum int64
				for _, task := range g.Tasks {
					sum += tt.bytes[task]
				}
				if sum != g.Bytes || !slices.IsSorted(g.Tasks) {
					t.Errorf("group %v: bytes %d, tasks sorted %v", g, sum, slices.IsSorted(g.Tasks))
				}
				all = append(all, g.Tasks...)
			}
			slices.Sort(all)
			for i, task := range all {
				if task != i {
					t.Fatalf("tasks %v, want each of 0..%d once", all, len(tt.bytes)-1)
				}
			}
			if len(all) != len(tt.bytes) {
				t.Fatalf("tasks %v, want %d", all, len(tt.bytes))
			}
		})
	}
	// Balanced by bytes: 9+2+1, 8+3, 7+4, 6+5 (largest first, to the lightest group).
	groups := GroupTasks([]int64{9, 8, 7, 6, 5, 4, 3, 2, 1}, 4, 1)
	var sizes []int64
	for _, g := range groups {
		sizes = append(sizes, g.Bytes)
	}
	if !slices.Equal(sizes, []int64{12, 11, 11, 11}) {
		t.Errorf("group bytes %v, want 12 11 11 11", sizes)
	}
}
