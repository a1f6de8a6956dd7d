package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/chaperone-bio/chaperone/client"
)

// checkServer asks the server whether it answers, is ready, accepts the worker token, and
// offers the models that can run here. Every call it makes changes nothing there.
func checkServer(ctx context.Context, cfg Config, models []ModelReport) *ServerReport {
	s := &ServerReport{URL: cfg.Server, Offered: []string{}, NotOffered: []string{}}
	c, err := client.New(cfg.Server, client.WithHTTPClient(cfg.HTTP), client.WithRetry(client.Retry{Attempts: 1}))
	if err != nil {
		s.Reached = Line{No, err.Error()}
		s.Token = Line{Skipped, "the server was not reached"}
		return s
	}
	h, err := c.Health(ctx)
	if err != nil {
		s.Reached = Line{No, fmt.Sprintf("%s did not answer: %v", cfg.Server, err)}
		s.Token = Line{Skipped, "the server was not reached"}
		return s
	}
	s.Version, s.Ready = h.Version, h.Ready
	s.Reached = Line{OK, fmt.Sprintf("chaperone %s, API %s", h.Version, h.APIVersion)}
	if !h.Ready {
		s.Reached = Line{Warn, fmt.Sprintf("chaperone %s is still starting (/v1/ready is not ready)", h.Version)}
	}
	s.Token = checkToken(ctx, cfg)
	cat, err := c.Models(ctx)
	if err != nil {
		return s
	}
	offered := map[string]bool{}
	for _, m := range cat.Models {
		offered[m.ID] = true
	}
	for _, m := range models {
		switch {
		case m.Status == No:
		case offered[m.Model]:
			s.Offered = append(s.Offered, m.Model)
		default:
			s.NotOffered = append(s.NotOffered, m.Model)
		}
	}
	return s
}

func checkToken(ctx context.Context, cfg Config) Line {
	if cfg.Token == "" {
		return Line{Skipped, "no --token given"}
	}
	name, err := workerTokenName(ctx, cfg.HTTP, cfg.Server, cfg.Token)
	switch {
	case errors.Is(err, errTokenRefused):
		return Line{No, "the server refuses the token as a worker token (unknown, revoked, or an API key: create one with chaperone keys create --worker)"}
	case err != nil:
		return Line{No, err.Error()}
	}
	return Line{OK, fmt.Sprintf("accepted as the worker token %q", name)}
}

// workerTokenPath is the worker endpoint (package worker/remote serves it) that answers a
// worker token with its name and changes nothing; any other token gets a 401.
const workerTokenPath = "/v1/worker/token"

// errTokenRefused is the server's 401 to the token.
var errTokenRefused = errors.New("the server refuses the token")

// workerTokenName asks the server at serverURL the name of a worker token.
func workerTokenName(ctx context.Context, hc *http.Client, serverURL, token string) (string, error) {
	url := strings.TrimSuffix(serverURL, "/") + workerTokenPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return "", errTokenRefused
	default:
		// A problem detail says why; a proxy's error page has none, and the status must do.
		var p struct {
			Detail string `json:"detail"`
		}
		_ = json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&p)
		if p.Detail == "" {
			return "", fmt.Errorf("the server answered %s to %s", res.Status, workerTokenPath)
		}
		return "", fmt.Errorf("the server answered %s to %s: %s", res.Status, workerTokenPath, p.Detail)
	}
	var info struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(res.Body).Decode(&info); err != nil {
		return "", fmt.Errorf("reading the answer to %s: %w", workerTokenPath, err)
	}
	return info.Name, nil
}
