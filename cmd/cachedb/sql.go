package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

func newSQLCommand() *cobra.Command {
	var (
		connect string
		execute string
	)
	cmd := &cobra.Command{
		Use:   "sql",
		Short: "Run SQL against a cachedb server and print the results",
		Long: "Runs the statements given with -e, or else read from standard input until EOF.\n" +
			"Statements are separated by ';' (and may then span lines), or one per line when\n" +
			"the input has no ';'. Every statement runs even when an earlier one fails; the\n" +
			"exit status is 1 when any failed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			text := execute
			if !cmd.Flags().Changed("execute") && os.Getenv(envPrefix+"EXECUTE") == "" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("reading statements from stdin: %w", err)
				}
				text = string(b)
			}
			return runSQL(cmd.Context(), connect, splitStatements(text), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&connect, "connect", defaultAddr, "HOST:PORT of the server")
	cmd.Flags().StringVarP(&execute, "execute", "e", "", "SQL to run instead of reading stdin")
	return cmd
}

// errStatementsFailed reports that at least one statement failed (each was already printed).
var errStatementsFailed = errors.New("some statements failed")

// runSQL runs each statement in turn, printing results to out and failures to errOut.
func runSQL(ctx context.Context, addr string, statements []string, out, errOut io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", addr, err)
	}
	defer cl.Close()
	nodes := &nodeClients{clients: map[string]*flightsql.Client{}}
	defer nodes.close()
	failed := false
	for _, stmt := range statements {
		if err := runStatement(ctx, cl, nodes, stmt, out); err != nil {
			failed = true
			fmt.Fprintf(errOut, "ERROR (%s): %s\n", status.Code(err), status.Convert(err).Message())
		}
	}
	if failed {
		return errStatementsFailed
	}
	return nil
}

// runStatement prepares the statement so the server says whether it returns rows, then runs it
// as a query (printing a table) or an update (printing the rows affected).
func runStatement(ctx context.Context, cl *flightsql.Client, nodes *nodeClients, query string, out io.Writer) error {
	prep, err := cl.Prepare(ctx, query)
	if err != nil {
		return err
	}
	defer prep.Close(context.WithoutCancel(ctx))

	if prep.DatasetSchema() == nil {
		n, err := prep.ExecuteUpdate(ctx)
		if err != nil {
			return err
		}
		if n >= 0 {
			fmt.Fprintf(out, "Query OK, %d rows affected\n", n)
		} else {
			fmt.Fprintln(out, "Query OK")
		}
		return nil
	}
	info, err := prep.Execute(ctx)
	if err != nil {
		return err
	}
	var table *resultTable
	for _, ep := range info.Endpoint {
		from, err := nodes.forEndpoint(cl, ep)
		if err != nil {
			return err
		}
		rdr, err := from.DoGet(ctx, ep.Ticket)
		if err != nil {
			return err
		}
		if table == nil {
			table = newResultTable(rdr.Schema())
		}
		for rdr.Next() {
			table.add(rdr.RecordBatch())
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return err
		}
	}
	if table != nil {
		table.write(out)
	}
	return nil
}

// nodeClients keeps one client per data node an endpoint sends the client to.
type nodeClients struct {
	clients map[string]*flightsql.Client
}

// forEndpoint returns the client to redeem ep with: the server's own when ep names no location,
// else one for the location's address.
func (n *nodeClients) forEndpoint(server *flightsql.Client, ep *flight.FlightEndpoint) (*flightsql.Client, error) {
	if len(ep.Location) == 0 {
		return server, nil
	}
	uri := ep.Location[0].Uri
	if cl, ok := n.clients[uri]; ok {
		return cl, nil
	}
	addr := strings.TrimPrefix(strings.TrimPrefix(uri, "grpc://"), "grpc+tcp://")
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connecting to data node %s: %w", addr, err)
	}
	n.clients[uri] = cl
	return cl, nil
}

func (n *nodeClients) close() {
	for _, cl := range n.clients {
		cl.Close()
	}
}
