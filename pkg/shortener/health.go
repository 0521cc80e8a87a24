package shortener

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
)

type healthReport struct {
	Status  string `json:"status"`
	Service string `json:"service"`
}

// serveHealth answers the health report. Its 503 keeps the report's shape
// (not problem+json) so that monitors read one document in both cases.
func (h *Handler) serveHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.healthTimeout)
	defer cancel()
	status, code := "healthy", http.StatusOK
	if err := h.svc.Ping(ctx); err != nil {
		h.svc.log.WarnContext(r.Context(), "shortener: health check failed", "err", err)
		status, code = "unhealthy", http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(healthReport{Status: status, Service: "url_shortener"})
	body = append(body, '\n')
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
