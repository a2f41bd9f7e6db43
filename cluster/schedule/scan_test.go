package schedule

import (
	"slices"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestPlaceScans(t *testing.T) {
	free := Scan{Locations: []string{"", "", "", ""}, Bytes: []int64{40, 30, 20, 10}}
	located := Scan{Locations: []string{"n2", "n1", "n3"}, Bytes: []int64{1, 1, 1}}
	for _, tt := range []struct {
		name      string
		scans     []Scan
		nodes     []string
		placeable int
		want      [][]int // nil with wantOK false: the head runs the query
		wantOK    bool
		wantErr   string // part of an errs.Unavailable message
	}{
		{name: "free tasks spread by bytes", scans: []Scan{free}, nodes: []string{"n1", "n2"}, placeable: 2,
			want: [][]int{{0, 1, 1, 0}}, wantOK: true},
		{name: "located tasks run where they are held", scans: []Scan{located}, nodes: []string{"n1", "n2", "n3"}, placeable: 3,
			want: [][]int{{1, 0, 2}}, wantOK: true},
		{name: "free tasks only on the placeable nodes, holders beyond serve theirs",
			scans: []Scan{{Locations: []string{"", "n3", ""}, Bytes: []int64{5, 5, 5}}}, nodes: []string{"n1", "n2", "n3"}, placeable: 2,
			want: [][]int{{0, 2, 1}}, wantOK: true},
		{name: "every scan placed", scans: []Scan{free, located}, nodes: []string{"n1", "n2", "n3"}, placeable: 3,
			want: [][]int{{0, 1, 2, 2}, {1, 0, 2}}, wantOK: true},
		{name: "no locations: every task free", scans: []Scan{{Bytes: []int64{3, 2, 1}}}, nodes: []string{"n1", "n2"}, placeable: 2,
			want: [][]int{{0, 1, 1}}, wantOK: true},
		{name: "a task on a node not in the list is being rebuilt", scans: []Scan{located}, nodes: []string{"n1", "n2"}, placeable: 2,
			wantErr: "data node n3, which was lost; its partitions are being rebuilt"},
		{name: "no node: a query of tables runs on the head", scans: []Scan{free}},
		{name: "no node: a query of held data cannot run", scans: []Scan{free, located},
			wantErr: "no data node is alive to read this query's data"},
		{name: "only holders: free tasks have nowhere to go",
			scans: []Scan{{Locations: []string{"", "n3"}, Bytes: []int64{1, 1}}}, nodes: []string{"n3"}, placeable: 0,
			wantErr: "no data node is alive to read this query's tables"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := PlaceScans(tt.scans, tt.nodes, tt.placeable)
			if tt.wantErr != "" {
				if errs.CategoryOf(err) != errs.Unavailable || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v (%v), want Unavailable %q", err, errs.CategoryOf(err), tt.wantErr)
				}
				return
			}
			if err != nil || ok != tt.wantOK || !slices.EqualFunc(got, tt.want, slices.Equal[[]int]) {
				t.Fatalf("PlaceScans = %v, %v, %v; want %v, %v", got, ok, err, tt.want, tt.wantOK)
			}
		})
	}
}

func TestScanHolders(t *testing.T) {
	scans := []Scan{
		{Bytes: []int64{1, 1, 1, 1}, Locations: []string{"", "s2", "a1", "s1"}},
		{Bytes: []int64{1, 1, 1, 1}, Locations: []string{"s1", "gone", "s3", "s2"}},
	}
	got := ScanHolders(scans, []string{"a1", "a2"}, []string{"a1", "a2", "s3", "s1", "s2"})
	if want := []string{"s2", "s1", "s3"}; !slices.Equal(got, want) {
		t.Errorf("ScanHolders = %v, want %v (first met, placeable and unreachable left out)", got, want)
	}
	if got := ScanHolders(scans, []string{"a1"}, nil); got != nil {
		t.Errorf("ScanHolders with nothing reachable = %v", got)
	}
}

func TestPlaceable(t *testing.T) {
	a, s, l := Node{ID: "a", State: Alive}, Node{ID: "s", State: Suspect}, Node{ID: "l", State: Lost}
	for _, tt := range []struct {
		nodes []Node
		want  string
	}{
		{[]Node{s, a, l}, "a"},
		{[]Node{l, s}, "s"},
		{[]Node{l}, ""},
		{nil, ""},
	} {
		var ids []string
		for _, n := range Placeable(tt.nodes, stateOf) {
			ids = append(ids, n.ID)
		}
		if got := strings.Join(ids, ","); got != tt.want {
			t.Errorf("Placeable(%v) = %s, want %s", tt.nodes, got, tt.want)
		}
	}
}
