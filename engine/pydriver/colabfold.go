package pydriver

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ESMFold2 takes an alignment but the esm package searches none, so the engine searches
// one itself on the operator's ColabFold MMseqs2 server, as ColabFold's own client does
// (colabfold/mmseqs/api.py): submit the sequence as a ticket (POST /ticket/msa, mode env),
// poll the ticket until it is complete, and download the result archive, whose UniRef and
// environmental alignments together are the chain's A3M.

// colabfoldPoll is how long the client waits between polls of a running ticket; ColabFold
// waits 5 to 10 s.
var colabfoldPoll = 5 * time.Second

// colabfoldFiles are the alignments of a result archive that make a chain's A3M, in order.
var colabfoldFiles = []string{"uniref.a3m", "bfd.mgnify30.metaeuk30.smag30.a3m"}

// searchMSA returns the A3M alignment of one protein sequence from the server.
func searchMSA(ctx context.Context, client *http.Client, server, seq string) ([]byte, error) {
	ticket, err := colabfoldTicket(ctx, client, http.MethodPost, server+"/ticket/msa",
		url.Values{"q": {">101\n" + seq + "\n"}, "mode": {"env"}})
	for err == nil && ticket.Status != "COMPLETE" {
		switch ticket.Status {
		case "PENDING", "RUNNING", "UNKNOWN", "RATELIMIT":
		default:
			return nil, fmt.Errorf("the MSA server answered %s", ticket.Status)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(colabfoldPoll):
		}
		ticket, err = colabfoldTicket(ctx, client, http.MethodGet, server+"/ticket/"+url.PathEscape(ticket.ID), nil)
	}
	if err != nil {
		return nil, err
	}
	archive, err := colabfoldGet(ctx, client, http.MethodGet, server+"/result/download/"+url.PathEscape(ticket.ID), nil)
	if err != nil {
		return nil, err
	}
	return colabfoldA3M(archive)
}

type colabfoldStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func colabfoldTicket(ctx context.Context, client *http.Client, method, u string, form url.Values) (colabfoldStatus, error) {
	var t colabfoldStatus
	body, err := colabfoldGet(ctx, client, method, u, form)
	if err == nil {
		err = json.Unmarshal(body, &t)
	}
	if err == nil && t.ID == "" {
		err = errors.New("a ticket without an id")
	}
	if err != nil {
		return t, fmt.Errorf("the MSA server's ticket: %w", err)
	}
	return t, nil
}

// colabfoldLimit bounds what the server may send: a result archive of one chain is a few
// megabytes.
const colabfoldLimit = 1 << 30

func colabfoldGet(ctx context.Context, client *http.Client, method, u string, form url.Values) ([]byte, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s", method, req.URL.Path, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, colabfoldLimit))
}

// colabfoldA3M joins the alignments of a result archive. The server separates the
// alignments of several queries with NUL bytes; with one query there is nothing to split.
func colabfoldA3M(archive []byte) ([]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("the MSA server's result: %w", err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the MSA server's result: %w", err)
		}
		for _, name := range colabfoldFiles {
			if h.Name == name || strings.HasSuffix(h.Name, "/"+name) {
				if files[name], err = io.ReadAll(io.LimitReader(tr, colabfoldLimit)); err != nil {
					return nil, fmt.Errorf("the MSA server's result: %w", err)
				}
			}
		}
	}
	var a3m bytes.Buffer
	for _, name := range colabfoldFiles {
		text := bytes.ReplaceAll(files[name], []byte{0}, nil)
		a3m.Write(text)
		if len(text) > 0 && text[len(text)-1] != '\n' {
			a3m.WriteByte('\n')
		}
	}
	if !bytes.HasPrefix(a3m.Bytes(), []byte(">")) {
		return nil, errors.New("the MSA server's result holds no alignment")
	}
	return a3m.Bytes(), nil
}
