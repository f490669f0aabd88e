package taskservice

import (
	"container/heap"
	"fmt"
	"testing"
	"time"

	"github.com/taskd/taskd/internal/held"
)

// BenchmarkTimerQueue measures the dispatch queue: queue an entry and pop
// the earliest, with 10,000 entries waiting.
func BenchmarkTimerQueue(b *testing.B) {
	var q held.Queue
	st := &held.Ident{Name: "q", Scope: held.ScopeLocal}
	base := time.Now()
	for i := range 10000 {
		q.Set(&held.Entry{Ident: st, ID: fmt.Sprintf("%026d", i), Idx: -1}, base.Add(time.Duration(i)*time.Millisecond))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		e := heap.Pop(&q).(*held.Entry)
		q.Set(e, base.Add(time.Duration(10000+i)*time.Millisecond))
	}
}
