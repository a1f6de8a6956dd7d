package doctor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// GPUFinder finds the machine's GPUs.
type GPUFinder interface {
	Find(ctx context.Context) GPUReport
}

// GPUReport is the GPUs found, and how.
type GPUReport struct {
	Line
	// Source is how they were found: "nvidia-smi", "/dev/nvidia*" (no memory figures), or
	// "none".
	Source string `json:"source"`
	GPUs   []GPU  `json:"gpus"`
}

// GPU is one device. Memory is in MiB as nvidia-smi reports it; 0 when unknown.
type GPU struct {
	Index         int    `json:"index"`
	Name          string `json:"name"`
	MemoryTotalMB int    `json:"memory_total_mib"`
	MemoryUsedMB  int    `json:"memory_used_mib"`
}

// SystemGPUs finds GPUs with nvidia-smi (NvidiaSMI, default the command on PATH), else as
// the device files under Dev (default /dev) that the NVIDIA driver creates.
type SystemGPUs struct {
	NvidiaSMI string
	Dev       string
}

var nvidiaDevice = regexp.MustCompile(`^nvidia([0-9]+)$`)

// Find implements GPUFinder. With CUDA_VISIBLE_DEVICES set, only the GPUs it lists by
// index count, as the worker uses only those (app.GPUs).
func (s SystemGPUs) Find(ctx context.Context) GPUReport {
	r := s.find(ctx)
	visible, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	if !set || r.Source == "none" {
		return r
	}
	ids := map[string]bool{}
	for _, id := range strings.Split(visible, ",") {
		ids[strings.TrimSpace(id)] = true
	}
	kept := []GPU{}
	for _, g := range r.GPUs {
		if ids[strconv.Itoa(g.Index)] {
			kept = append(kept, g)
		}
	}
	note := fmt.Sprintf(" (CUDA_VISIBLE_DEVICES=%s leaves %d of %d)", visible, len(kept), len(r.GPUs))
	r.GPUs, r.Reason = kept, r.Reason+note
	if len(kept) == 0 {
		r.Status = Warn
	}
	return r
}

func (s SystemGPUs) find(ctx context.Context) GPUReport {
	smi := s.NvidiaSMI
	if smi == "" {
		smi, _ = exec.LookPath("nvidia-smi")
	}
	var smiErr error
	if smi != "" {
		gpus, err := querySMI(ctx, smi)
		if err == nil {
			return gpuReport("nvidia-smi", gpus)
		}
		smiErr = err
	}
	dev := s.Dev
	if dev == "" {
		dev = "/dev"
	}
	files, _ := filepath.Glob(filepath.Join(dev, "nvidia*"))
	var gpus []GPU
	for _, f := range files {
		if m := nvidiaDevice.FindStringSubmatch(filepath.Base(f)); m != nil {
			n, _ := strconv.Atoi(m[1])
			gpus = append(gpus, GPU{Index: n})
		}
	}
	slices.SortFunc(gpus, func(a, b GPU) int { return a.Index - b.Index })
	if len(gpus) > 0 {
		r := gpuReport("/dev/nvidia*", gpus)
		r.Reason += "; memory unknown without nvidia-smi"
		if smiErr != nil {
			r.Reason = fmt.Sprintf("%s; nvidia-smi failed: %v", r.Reason, smiErr)
		}
		return r
	}
	r := GPUReport{Line: Line{Warn, "no GPU found (no nvidia-smi, no /dev/nvidia*): models run on the CPU, slowly, where their tools allow it"}, Source: "none", GPUs: []GPU{}}
	if smiErr != nil {
		r.Reason = fmt.Sprintf("no GPU found: nvidia-smi failed (%v) and there is no /dev/nvidia*", smiErr)
	}
	return r
}

func gpuReport(source string, gpus []GPU) GPUReport {
	var names []string
	for _, g := range gpus {
		switch {
		case g.MemoryTotalMB > 0:
			names = append(names, fmt.Sprintf("%d: %s, %.0f GB (%.0f GB in use)", g.Index, g.Name, gb(g.MemoryTotalMB), gb(g.MemoryUsedMB)))
		default:
			names = append(names, fmt.Sprintf("%d", g.Index))
		}
	}
	return GPUReport{Line: Line{OK, fmt.Sprintf("%d found with %s: %s", len(gpus), source, strings.Join(names, "; "))}, Source: source, GPUs: gpus}
}

// gb is MiB in gigabytes (10⁹ bytes), the unit of the engines' figures.
func gb(mib int) float64 { return float64(mib) * (1 << 20) / 1e9 }

// querySMI asks nvidia-smi for every GPU's index, name and memory.
func querySMI(ctx context.Context, smi string) ([]GPU, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, smi, "--query-gpu=index,name,memory.total,memory.used", "--format=csv,noheader,nounits")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var gpus []GPU
	for line := range strings.Lines(string(out)) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 4 {
			return nil, fmt.Errorf("unexpected line %q", strings.TrimSpace(line))
		}
		var g GPU
		var errs [3]error
		g.Index, errs[0] = strconv.Atoi(strings.TrimSpace(f[0]))
		g.Name = strings.TrimSpace(f[1])
		g.MemoryTotalMB, errs[1] = strconv.Atoi(strings.TrimSpace(f[2]))
		g.MemoryUsedMB, errs[2] = strconv.Atoi(strings.TrimSpace(f[3]))
		for _, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("unexpected line %q", strings.TrimSpace(line))
			}
		}
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		return nil, fmt.Errorf("it listed no GPU")
	}
	return gpus, nil
}

// short says why the GPUs fall short of a model that needs need GB ("" when they do not,
// or when either figure is unknown).
func (r GPUReport) short(need *float64) string {
	if len(r.GPUs) == 0 {
		return "no GPU found"
	}
	largest := 0.0
	for _, g := range r.GPUs {
		largest = max(largest, gb(g.MemoryTotalMB))
	}
	if need == nil || largest == 0 || largest >= *need {
		return ""
	}
	return fmt.Sprintf("needs about %.0f GB of GPU memory; the largest GPU here has %.0f GB", *need, largest)
}
