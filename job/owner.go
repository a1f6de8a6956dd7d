package job

import "strings"

// OwnerKind says how an owner was identified (decisions: Ownership).
type OwnerKind string

const (
	OwnerKey     OwnerKind = "key"
	OwnerSession OwnerKind = "session"
	OwnerIP      OwnerKind = "ip"
)

// Owner is whoever a job belongs to: an API key, a web session or a client IP.
type Owner struct {
	Kind OwnerKind
	ID   string // key id, session id or IP address
}

// String is the owner's stable storage form, "kind:id".
func (o Owner) String() string { return string(o.Kind) + ":" + o.ID }

// ParseOwner reverses Owner.String.
func ParseOwner(s string) (Owner, bool) {
	kind, id, ok := strings.Cut(s, ":")
	switch OwnerKind(kind) {
	case OwnerKey, OwnerSession, OwnerIP:
		return Owner{Kind: OwnerKind(kind), ID: id}, ok && id != ""
	}
	return Owner{}, false
}
