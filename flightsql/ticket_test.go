package flightsql

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
)

var ticketNow = time.Unix(1_700_000_000, 0)

func TestStatementTicketRoundTrip(t *testing.T) {
	keys := ticket.RandomKeyring()
	for _, want := range []statementTicket{
		{Stage: cluster.Stage{SQL: "SELECT 1"}},
		{Stage: cluster.Stage{SQL: "SELECT 'ünïcødé', x FROM t WHERE y = '\x00'"}},
		{Stage: cluster.Stage{SQL: "SELECT count(*) FROM t", Query: "q2", Nodes: []string{"n:1"}, Owners: [][]int{{0}}}, Self: -1},
		{Stage: cluster.Stage{SQL: "SELECT a FROM t", Query: "q1", Nodes: []string{"127.0.0.1:1", "127.0.0.1:2"}, Owners: [][]int{{0, 1, 1}, {}, {1}},
			Catalog: "lake", Schema: "ns", Pins: map[string]string{"t": "@42", "ns.u": "@7"}}, Self: 1},
	} {
		raw, err := keys.Seal(ticketNow.Add(time.Minute), want)
		if err != nil {
			t.Fatal(err)
		}
		got, expires, err := ticket.OpenAs[statementTicket](keys, raw, ticketNow)
		if err != nil {
			t.Fatalf("open(seal(%+v)): %v", want, err)
		}
		if !expires.Equal(ticketNow.Add(time.Minute)) {
			t.Errorf("expires %v", expires)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip = %+v, want %+v", got, want)
		}
	}
}

// Servers given the same key accept each other's tickets: the head signs, data nodes verify.
func TestTicketKeySharedAcrossServers(t *testing.T) {
	head, node := ticket.NewKeyring([]byte("cluster secret"), nil), ticket.NewKeyring([]byte("cluster secret"), nil)
	raw, err := head.Seal(ticketNow.Add(time.Minute), statementTicket{Stage: cluster.Stage{SQL: "SELECT 1", Query: "q", Nodes: []string{"a", "b"}, Owners: [][]int{{1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := ticket.OpenAs[statementTicket](node, raw, ticketNow); err != nil || len(got.Stage.Owners[0]) != 1 {
		t.Errorf("node refused the head's ticket: %+v %v", got, err)
	}
	if _, err := ticket.NewKeyring([]byte("another secret"), nil).Open(raw, ticketNow); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("a node with another key accepted the ticket: %v", err)
	}
}

// A training read's segment survives the ticket, every field of it: the test fills every field
// of engine.EpochSlice by reflection, so a field added there fails here until the ticket
// carries it.
func TestTrainingTicketCarriesEveryField(t *testing.T) {
	var slice engine.EpochSlice
	next := 0
	fillEveryField(t, reflect.ValueOf(&slice).Elem(), "EpochSlice", &next)
	slice.Names = slice.Names[:len(slice.Columns)]
	keys := ticket.RandomKeyring()
	raw, err := keys.Seal(ticketNow.Add(time.Minute), newTrainingTicket(slice))
	if err != nil {
		t.Fatal(err)
	}
	tt, _, err := ticket.OpenAs[trainingTicket](keys, raw, ticketNow)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tt.slice()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, slice) {
		t.Fatalf("round trip = %+v, want %+v", got, slice)
	}
}

// fillEveryField sets every field reachable from v to a value other than its zero and other
// than every other field's (numbers count up from *next), small enough for a training ticket's
// bounds.
func fillEveryField(t *testing.T, v reflect.Value, path string, next *int) {
	*next++
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fillEveryField(t, v.Field(i), path+"."+v.Type().Field(i).Name, next)
		}
	case reflect.String:
		v.SetString(path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*next))
	case reflect.Uint64:
		v.SetUint(math.MaxUint64 - uint64(*next))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillEveryField(t, s.Index(i), path, next)
		}
		v.Set(s)
	default:
		t.Fatalf("%s: a %s field; teach fillEveryField and the training ticket about it", path, v.Kind())
	}
}

// A training ticket with counts out of range, or columns without names, is refused before the
// data node plans anything.
func TestTrainingTicketBounds(t *testing.T) {
	good := trainingTicket{Dataset: "d", Columns: []int{0}, Names: []string{"a"}, PartRows: []int64{5}, WorldSize: 1, NumWorkers: 1, To: 5}
	if _, err := good.slice(); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]func(*trainingTicket){
		"negative column": func(t *trainingTicket) { t.Columns = []int{-1} },
		"huge chunk rows": func(t *trainingTicket) { t.ChunkRows = 1 << 40 },
		"huge world":      func(t *trainingTicket) { t.WorldSize = 1 << 31 },
		"negative rows":   func(t *trainingTicket) { t.PartRows = []int64{-5} },
		"missing names":   func(t *trainingTicket) { t.Names = nil },
	} {
		tt := good
		bad(&tt)
		if _, err := tt.slice(); errs.CategoryOf(err) != errs.InvalidInput || !strings.Contains(err.Error(), "training ticket is malformed") {
			t.Errorf("%s: %v, want a malformed training ticket", name, err)
		}
	}
}
