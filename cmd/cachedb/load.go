package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/flightsql"
	"github.com/cachedb/cachedb/internal/rpcerr"
)

func newLoadCommand() *cobra.Command {
	var (
		head       string
		replace    bool
		partitions int
		quiet      bool
		conn       clientFlags
	)
	cmd := &cobra.Command{
		Use:   "load SPEC",
		Short: "Materialize the dataset a job spec (YAML or JSON) declares on the data nodes",
		Long: "Reads a job spec (a file, or - for standard input) declaring a dataset: a source table\n" +
			"with feature columns, a filter and a snapshot, or a SQL query (docs/datasets.md). The\n" +
			"head plans it, the data nodes read it from object storage and hold it in memory, and\n" +
			"queries then name it like a table. Loading the same spec again reuses the dataset\n" +
			"without reading storage. Progress is shown on standard error: a bar on a terminal,\n" +
			"else a line per partition made.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := readSpec(args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("replace") {
				spec.Replace = replace
			}
			if cmd.Flags().Changed("partitions") {
				spec.Partitions = partitions
			}
			var progress io.Writer = cmd.ErrOrStderr()
			if quiet {
				progress = io.Discard
			}
			d, err := conn.dialer()
			if err != nil {
				return err
			}
			return runLoad(cmd.Context(), d, head, spec, cmd.OutOrStdout(), progress)
		},
	}
	conn.register(cmd)
	f := cmd.Flags()
	f.StringVar(&head, "head", defaultAddr, "HOST:PORT of the head")
	f.BoolVar(&replace, "replace", false, "replace a dataset of the same name made from a different definition")
	f.IntVar(&partitions, "partitions", 0, "number of partitions (default: the spec's, else 4 per data node)")
	f.BoolVarP(&quiet, "quiet", "q", false, "show no progress")
	return cmd
}

// readSpec reads a job spec from path ("-": r) as YAML, of which JSON is a subset. Unknown keys
// are errors, so a misspelt field is not silently ignored.
func readSpec(path string, r io.Reader) (engine.DatasetSpec, error) {
	var (
		data []byte
		err  error
	)
	if path == "-" {
		data, err = io.ReadAll(r)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return engine.DatasetSpec{}, fmt.Errorf("reading the spec: %w", err)
	}
	var spec engine.DatasetSpec
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&spec); err != nil {
		return engine.DatasetSpec{}, fmt.Errorf("spec %s: %w", path, err)
	}
	if _, err := spec.Query(); err != nil {
		return engine.DatasetSpec{}, fmt.Errorf("spec %s: %w", path, err)
	}
	return spec, nil
}

// runLoad sends the spec to the head, shows its progress on progress (a bar when that is a
// terminal) and prints the dataset.
func runLoad(ctx context.Context, d *dialer, head string, spec engine.DatasetSpec, out, progress io.Writer) error {
	body, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	cl, err := d.flight(ctx, head)
	if err != nil {
		return err
	}
	defer cl.Close()
	stream, err := cl.DoAction(ctx, &flight.Action{Type: flightsql.ActionLoad, Body: body})
	if err != nil {
		return loadError(head, err)
	}
	var loaded *flightsql.LoadedDataset
	shown := newLoadProgress(progress, isTerminal(progress), spec.Name)
	for {
		res, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			shown.close()
			return loadError(head, err)
		}
		var msg flightsql.LoadMessage
		if err := json.Unmarshal(res.GetBody(), &msg); err != nil {
			return fmt.Errorf("unexpected answer from %s: %w", head, err)
		}
		switch {
		case msg.Progress != nil:
			shown.update(*msg.Progress)
		case msg.Dataset != nil:
			loaded = msg.Dataset
		}
	}
	if loaded == nil {
		shown.close()
		return fmt.Errorf("%s ended the load without describing the dataset", head)
	}
	shown.finish(loaded.Reused)
	verb := "materialized"
	if loaded.Reused {
		verb = "reused (already held, nothing read from storage)"
	}
	fmt.Fprintf(out, "dataset %s %s: %d rows, %s in %d partitions on %s, snapshot %s, %.2fs\n",
		loaded.Name, verb, loaded.Rows, humanBytes(loaded.Bytes), loaded.Partitions,
		strings.Join(loaded.Nodes, ", "), snapshotText(loaded.Snapshot), loaded.Seconds)
	return nil
}

func loadError(head string, err error) error {
	return fmt.Errorf("load on %s failed (%s): %w", head, rpcerr.Code(err), rpcerr.FromStatus(err))
}

func snapshotText(pins map[string]string) string {
	if len(pins) == 0 {
		return "-"
	}
	return strings.ReplaceAll(cluster.PinsText(pins), ",", ", ")
}

// humanBytes writes n in binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
