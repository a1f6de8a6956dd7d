package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics is what /metrics exposes: request counts and latency by route and status, and,
// read from the store at scrape time, jobs by kind/model/status, queue depth and workers.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(s *Server, more []prometheus.Collector) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chaperone_http_requests_total",
			Help: "HTTP requests by method, route pattern and status code.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chaperone_http_request_duration_seconds",
			Help:    "HTTP request latency by method and route pattern (long-poll holds included).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"method", "route"}),
	}
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "chaperone_held_requests",
		Help: "Requests held open by Prefer: wait.",
	}, func() float64 { return float64(s.holding.Load()) })
	m.registry.MustRegister(m.requests, m.latency, held, &stateCollector{s: s},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registry.MustRegister(more...)
	return m
}

func (m *metrics) observe(method, route string, status int, d time.Duration) {
	method = methodLabel(method)
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(method, route).Observe(d.Seconds())
}

// methodLabel keeps the method label to the methods of HTTP itself. A client may send any
// token as a method, and each distinct label value is a series kept for the life of the
// process, so taking the method as sent would let anyone grow the server's memory.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "other"
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// stateCollector reads job and worker state from the store when scraped, so the figures
// are those of the whole deployment, not of this replica's memory.
type stateCollector struct{ s *Server }

var (
	jobsDesc = prometheus.NewDesc("chaperone_jobs",
		"Jobs held, by kind, model and status.", []string{"kind", "model", "status"}, nil)
	queueDesc = prometheus.NewDesc("chaperone_queue_depth",
		"Jobs queued: waiting for a worker, or for their alignments first.", nil, nil)
	workersDesc = prometheus.NewDesc("chaperone_workers",
		"Live workers (heartbeat fresh).", nil, nil)
	slotsDesc = prometheus.NewDesc("chaperone_worker_slots",
		"Job slots of live workers, by state.", []string{"state"}, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- queueDesc
	ch <- workersDesc
	ch <- slotsDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := c.s.store
	if counts, err := st.CountJobs(ctx); err == nil {
		for _, n := range counts {
			ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n.N),
				string(n.Kind), n.RunModel, string(n.Status))
		}
	} else {
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
	}
	if depth, err := st.QueueDepth(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(depth))
	} else {
		ch <- prometheus.NewInvalidMetric(queueDesc, err)
	}
	ws, err := st.LiveWorkers(ctx, c.s.now().Add(-c.s.workerTTL))
	if err != nil {
		ch <- prometheus.NewInvalidMetric(workersDesc, err)
		return
	}
	slots, busy := 0, 0
	for _, w := range ws {
		slots += w.Slots
		busy += w.Busy
	}
	ch <- prometheus.MustNewConstMetric(workersDesc, prometheus.GaugeValue, float64(len(ws)))
	ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(busy), "busy")
	ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(slots-busy), "idle")
}
