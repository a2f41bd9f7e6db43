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
	"golang.org/x/term"

	"github.com/cachedb/cachedb/internal/rpcerr"
)

func newSQLCommand() *cobra.Command {
	var (
		connect string
		execute string
		conn    clientFlags
	)
	cmd := &cobra.Command{
		Use:   "sql",
		Short: "Run SQL against a cachedb server and print the results",
		Long: "On a terminal, an interactive shell: a prompt, line editing, history, statements\n" +
			"run as each ';' (or \\G, to print rows vertically) ends them; type help for more.\n\n" +
			"Otherwise runs the statements given with -e, separated by ';' (one statement may span\n" +
			"lines), or else those read from standard input until EOF: separated by ';', or one per\n" +
			"line when the input has no ';'. One ended by \\G prints its rows vertically. Every statement\n" +
			"runs even when an earlier one fails; the exit status is 1 when any failed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := conn.dialer()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("execute") || os.Getenv(envPrefix+"EXECUTE") != "" {
				// As mysql -e: only ';' separates statements, so a query pasted over several
				// lines is one statement.
				return runSQL(cmd.Context(), d, connect, splitAtSemicolons(execute), cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			if isTerminal(cmd.InOrStdin()) {
				return runShell(cmd.Context(), d, connect, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			b, err := io.ReadAll(cmd.InOrStdin())
			if err != nil {
				return fmt.Errorf("reading statements from stdin: %w", err)
			}
			return runSQL(cmd.Context(), d, connect, splitStatements(string(b)), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	conn.register(cmd)
	cmd.Flags().StringVar(&connect, "connect", defaultAddr, "HOST:PORT of the server")
	cmd.Flags().StringVarP(&execute, "execute", "e", "", "SQL to run instead of reading stdin")
	return cmd
}

// isTerminal says whether f is a terminal (a file descriptor that is a tty).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// errStatementsFailed reports that at least one statement failed (each was already printed).
var errStatementsFailed = errors.New("some statements failed")

// runSQL runs each statement in turn, printing results to out and failures to errOut.
func runSQL(ctx context.Context, d *dialer, addr string, statements []string, out, errOut io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	sess, err := openSession(ctx, d, addr)
	if err != nil {
		return err
	}
	defer sess.close()
	failed := false
	for _, text := range statements {
		for _, piece := range endsAtGo(text) {
			res, err := sess.run(ctx, piece.stmt)
			if err != nil {
				failed = true
				printError(errOut, err)
				continue
			}
			if piece.vertical && res.table != nil {
				res.table.writeVertical(out)
				fmt.Fprintln(out, rowCount(len(res.table.rows)))
				continue
			}
			res.write(out)
		}
	}
	if failed {
		return errStatementsFailed
	}
	return nil
}

// goPiece is a statement and whether \G ended it (print its rows vertically).
type goPiece struct {
	stmt     string
	vertical bool
}

// endsAtGo cuts a statement at the \G and \g that end it, as the mysql client does on a pipe
// and with -e: "SELECT 1\G" prints its row vertically.
func endsAtGo(text string) []goPiece {
	var out []goPiece
	for {
		stmt, vertical, rest, ok := takeStatement(text)
		if !ok {
			break
		}
		if stmt != "" {
			out = append(out, goPiece{stmt, vertical})
		}
		text = rest
	}
	if s := strings.TrimSpace(text); s != "" {
		out = append(out, goPiece{stmt: s})
	}
	return out
}

// printError writes a failed statement's gRPC code and message, as `cachedb sql` reports it.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "ERROR (%s): %s\n", rpcerr.Code(err), rpcerr.Message(err))
}

// session is a connection to a server and to the data nodes its endpoints name.
type session struct {
	cl    *flightsql.Client
	nodes *nodeClients
}

func openSession(ctx context.Context, d *dialer, addr string) (*session, error) {
	cl, err := d.flightSQL(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &session{cl: cl, nodes: &nodeClients{dialer: d, clients: map[string]*flightsql.Client{}}}, nil
}

func (s *session) close() {
	s.nodes.close()
	s.cl.Close()
}

// run runs one statement; cancelling ctx stops it.
func (s *session) run(ctx context.Context, stmt string) (statementResult, error) {
	return runStatement(ctx, s.cl, s.nodes, stmt)
}

// statementResult is what a statement returned: rows (table set) or a count of rows affected
// (-1 when the server does not say).
type statementResult struct {
	table    *resultTable
	affected int64
}

// write prints the result as `cachedb sql` does on a pipe: a table and its row count, or
// "Query OK".
func (r statementResult) write(out io.Writer) {
	switch {
	case r.table != nil:
		r.table.write(out)
	case r.affected >= 0:
		fmt.Fprintf(out, "Query OK, %d rows affected\n", r.affected)
	default:
		fmt.Fprintln(out, "Query OK")
	}
}

// runStatement prepares the statement so the server says whether it returns rows, then runs it
// as a query (collecting its rows) or an update (counting the rows affected).
func runStatement(ctx context.Context, cl *flightsql.Client, nodes *nodeClients, query string) (statementResult, error) {
	prep, err := cl.Prepare(ctx, query)
	if err != nil {
		return statementResult{}, err
	}
	defer prep.Close(context.WithoutCancel(ctx))

	if prep.DatasetSchema() == nil {
		n, err := prep.ExecuteUpdate(ctx)
		if err != nil {
			return statementResult{}, err
		}
		return statementResult{affected: n}, nil
	}
	info, err := prep.Execute(ctx)
	if err != nil {
		return statementResult{}, err
	}
	var table *resultTable
	for _, ep := range info.Endpoint {
		from, err := nodes.forEndpoint(cl, ep)
		if err != nil {
			return statementResult{}, err
		}
		rdr, err := from.DoGet(ctx, ep.Ticket)
		if err != nil {
			return statementResult{}, err
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
			return statementResult{}, err
		}
	}
	if table == nil {
		table = newResultTable(prep.DatasetSchema())
	}
	return statementResult{table: table}, nil
}

// nodeClients keeps one client per data node an endpoint sends the client to.
type nodeClients struct {
	dialer  *dialer
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
	cl, err := n.dialer.location(uri)
	if err != nil {
		return nil, err
	}
	n.clients[uri] = cl
	return cl, nil
}

func (n *nodeClients) close() {
	for _, cl := range n.clients {
		cl.Close()
	}
}
