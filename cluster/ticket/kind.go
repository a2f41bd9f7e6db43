package ticket

import (
	"fmt"
	"strings"
)

// Kind says what a ticket's payload is and who redeems it. Kinds are never renumbered: a number
// once used keeps its meaning.
type Kind uint8

const (
	// Statement is a query for a Flight SQL server (head or data node) to run at DoGet: the
	// whole query, or one part of a distributed execution.
	Statement Kind = 1
	// Empty is the empty result of a statement that already ran at GetFlightInfo.
	Empty Kind = 2
	// Training is one segment of a training read, redeemed at the data node holding its rows.
	Training Kind = 3
	// Partition asks a data node for one partition of a dataset it holds (the head reads it).
	Partition Kind = 4
	// Shuffle asks a data node for one bucket of one shuffle of a distributed execution.
	Shuffle Kind = 5
	// Action signs one internal call (a Flight DoAction) between the head and the data nodes.
	Action Kind = 6
	// Token is a bearer token a login was exchanged for (internal/auth), presented on every call
	// after it to the head or a data node.
	Token Kind = 7
)

// kinds gives every known kind its name, the version of its payload struct and what to do
// once such a ticket expired. Bump a kind's version when its struct changes in a way an older
// process must not read (a field removed or meaning something else); a process opens only the
// version it knows.
var kinds = map[Kind]struct {
	name, expiredHint string
	version           uint8
}{
	Statement: {"statement", "run the statement again", 1},
	Empty:     {"empty result", "run the statement again", 1},
	Training:  {"training", "ask for the training read again", 1},
	Partition: {"partition", "run the query again", 1},
	Shuffle:   {"shuffle", "run the query again", 1},
	Action:    {"action", "the clocks of the head and the data nodes disagree, or the call was replayed", 1},
	Token:     {"token", "log in again", 1},
}

func (k Kind) String() string {
	if info, ok := kinds[k]; ok {
		return info.name
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// article is the kind's name after "a" or "an".
func (k Kind) article() string {
	name := k.String()
	if strings.ContainsRune("aeiou", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// Version is the payload version of kind this process seals and opens (0 for an unknown kind).
func (k Kind) Version() uint8 { return kinds[k].version }

// Payload is the struct a ticket of one kind carries. Each kind has exactly one payload type,
// a struct value (not a pointer) whose TicketKind names the kind, so a payload cannot be sealed
// or decoded as another kind's.
type Payload interface {
	TicketKind() Kind
}
