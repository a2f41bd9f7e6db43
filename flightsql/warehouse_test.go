package flightsql

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/cachedb/cachedb/catalog/iceberg/demo"
)

// The embedded warehouse (200,000 rides written by iceberg-go) is generated once per test
// process and shared by every test that reads it: the tests only read Iceberg tables (datasets
// and memory tables live in their servers' memory), so none can disturb another, and generating
// it per test cost seconds each on a busy machine.
var shared struct {
	once sync.Once
	dir  string
	wh   demo.Warehouse
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// demoWarehouse returns the process's embedded warehouse, generating it on first use.
func demoWarehouse(t *testing.T) demo.Warehouse {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "cachedb-flightsql-warehouse")
		if shared.err == nil {
			shared.wh, shared.err = demo.Ensure(context.Background(), shared.dir)
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.wh
}
