// Package deps pins modules the session is about to use; delete when they are imported.
package deps

import (
	_ "github.com/pressly/goose/v3"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "golang.org/x/sys/unix"
	_ "modernc.org/sqlite"
)
