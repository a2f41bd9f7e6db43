package slt

import (
	"context"
	"sync"
)

// RunFiles runs files with up to parallel of them at once (each against its own backend) and
// returns their results in the order of files. report, when set, is called with each result in
// that same order as soon as it and every result before it are done, so progress output is
// deterministic whatever the parallelism.
func RunFiles(ctx context.Context, files []TestFile, start StartBackend, opts Options, parallel int, report func(FileResult)) []FileResult {
	if parallel < 1 {
		parallel = 1
	}
	results := make([]FileResult, len(files))
	done := make([]chan struct{}, len(files))
	for i := range done {
		done[i] = make(chan struct{})
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = RunFile(ctx, files[i].Path, files[i].Name, start, opts)
				close(done[i])
			}
		}()
	}
	go func() {
		for i := range files {
			work <- i
		}
		close(work)
	}()
	for i := range files {
		<-done[i]
		if report != nil {
			report(results[i])
		}
	}
	wg.Wait()
	return results
}
