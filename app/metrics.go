package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chaperone-bio/chaperone/aligner"
)

// alignmentMetrics shows what this replica's alignment stage did on /metrics.
type alignmentMetrics struct{ stage *aligner.Stage }

var (
	alignmentSearches = prometheus.NewDesc("chaperone_alignment_searches_total",
		"Alignment searches this replica's stage needed, by how it got them: searched (on the MSA server or with MMseqs2), "+
			"cache (searched before), waited (searched meanwhile by another job's search, here or on another replica).",
		[]string{"how"}, nil)
	alignmentJobs = prometheus.NewDesc("chaperone_alignment_jobs_total",
		"Jobs whose alignments this replica's stage finished, by result: aligned (handed on to the workers) or failed.",
		[]string{"result"}, nil)
)

func (m alignmentMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- alignmentSearches
	ch <- alignmentJobs
}

func (m alignmentMetrics) Collect(ch chan<- prometheus.Metric) {
	st := m.stage.Stats()
	for how, n := range map[string]int{"searched": st.Searched, "cache": st.Hits, "waited": st.Waited} {
		ch <- prometheus.MustNewConstMetric(alignmentSearches, prometheus.CounterValue, float64(n), how)
	}
	for result, n := range map[string]int{"aligned": st.Jobs, "failed": st.Failed} {
		ch <- prometheus.MustNewConstMetric(alignmentJobs, prometheus.CounterValue, float64(n), result)
	}
}
