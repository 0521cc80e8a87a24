// Command otlpsink is the OTLP/HTTP trace receiver of the benchmarks: it
// accepts POST /v1/traces, decodes each export as a collector would and
// counts the spans, so that a traced idp-proxy exports to a live
// receiver on loopback. It keeps nothing.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"strconv"
	"sync/atomic"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:4318", "address to listen on")
	flag.Parse()
	var spans atomic.Int64
	ok, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				spans.Add(int64(len(ss.GetSpans())))
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(ok)
	})
	mux.HandleFunc("GET /spans", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, strconv.FormatInt(spans.Load(), 10)+"\n")
	})
	log.Printf("otlpsink listening on %s", *listen)
	log.Fatal(http.ListenAndServe(*listen, mux))
}
