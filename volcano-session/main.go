// Command volcano-session runs Volcano's own scheduling code on cluster snapshots.
//
// It reads cases as JSON lines on standard input (see case.go) and writes one JSON line per case
// to standard output. Each case is a set of Kubernetes objects (Nodes, Pods, PodGroups, Queues,
// HyperNodes, PriorityClasses, in the form `kubectl get -o json` writes them) and a scheduler
// policy. The objects go into the scheduler cache through the same exported event handlers
// Volcano's action tests use (pkg/scheduler/uthelper/helper.go), and the policy's actions run in
// a session with the real plugins, cycle after cycle until nothing changes.
//
// Volcano's fake evictor prints to standard output (pkg/scheduler/util/test_utils.go), so the
// results go to the original standard output and everything else to standard error.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/pkg/scheduler/metrics"
)

func main() {
	// The cache's informers watch empty fake clientsets. The clientset generated in
	// volcano.sh/apis v1.14.0 does not declare that it cannot stream a watch list, so client-go
	// would wait for a bookmark that never comes; listing the usual way gives the same (empty)
	// start. Kubernetes wires client-go's gates into this one (pkg/features/kube_features.go).
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{"WatchListClient": false}); err != nil {
		fmt.Fprintln(os.Stderr, "volcano-session:", err)
		os.Exit(1)
	}
	// Kubernetes' scheduler plugins, which Volcano's predicates call, record metrics the
	// scheduler binary registers at start (as pkg/scheduler/uthelper does for the tests).
	metrics.InitKubeSchedulerRelatedMetrics()
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	klog.InitFlags(nil)
	_ = flag.Set("v", "0")
	_ = flag.Set("logtostderr", "true")
	flag.Parse()
	if *cpuProfile != "" {
		file, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(file)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "volcano-session:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}

	results := os.Stdout
	os.Stdout = os.Stderr

	if err := serve(os.Stdin, results); err != nil {
		fmt.Fprintln(os.Stderr, "volcano-session:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// serve answers every case of the input in order; a case that cannot be run is answered with
// its error, so one bad case never hides the others.
func serve(in io.Reader, out io.Writer) error {
	reader := bufio.NewReaderSize(in, 1<<20)
	writer := bufio.NewWriter(out)
	encoder := json.NewEncoder(writer)
	for {
		line, err := reader.ReadBytes('\n')
		if len(line) > 0 && !blank(line) {
			var c Case
			var answer Answer
			if decodeErr := json.Unmarshal(line, &c); decodeErr != nil {
				answer = Answer{Error: "case: " + decodeErr.Error()}
			} else {
				answer = run(c)
			}
			if encodeErr := encoder.Encode(answer); encodeErr != nil {
				return encodeErr
			}
			if flushErr := writer.Flush(); flushErr != nil {
				return flushErr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func blank(line []byte) bool {
	for _, b := range line {
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			return false
		}
	}
	return true
}
