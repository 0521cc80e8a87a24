package shortener

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"mime"
	"net/http"
	"strconv"
	"strings"

	qrcode "github.com/yeqown/go-qrcode/v2"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// QR code rendering: 8 pixels per module in PNG and the quiet zone of 4
// modules that readers need.
const (
	qrScale     = 8
	qrQuietZone = 4
)

// QRMatrix returns the modules of a QR code (error correction level M,
// byte mode) of text, true for dark, without the quiet zone.
func QRMatrix(text string) ([][]bool, error) {
	qrc, err := qrcode.NewWith(text,
		qrcode.WithEncodingMode(qrcode.EncModeByte),
		qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium))
	if err != nil {
		return nil, fmt.Errorf("shortener: QR code: %w", err)
	}
	var m matrixWriter
	if err := qrc.Save(&m); err != nil {
		return nil, fmt.Errorf("shortener: QR code: %w", err)
	}
	return m.bits, nil
}

// matrixWriter keeps the matrix that qrcode.QRCode.Save hands over.
type matrixWriter struct{ bits [][]bool }

func (m *matrixWriter) Write(mat qrcode.Matrix) error { m.bits = mat.Bitmap(); return nil }
func (m *matrixWriter) Close() error                  { return nil }

// QRPNG renders a QR code of text as a black-on-white PNG.
func QRPNG(text string) ([]byte, error) {
	bits, err := QRMatrix(text)
	if err != nil {
		return nil, err
	}
	n := len(bits) + 2*qrQuietZone
	img := image.NewPaletted(image.Rect(0, 0, n*qrScale, n*qrScale), color.Palette{color.White, color.Black})
	for y, row := range bits {
		for x, dark := range row {
			if !dark {
				continue
			}
			x0, y0 := (x+qrQuietZone)*qrScale, (y+qrQuietZone)*qrScale
			for dy := range qrScale {
				line := img.Pix[(y0+dy)*img.Stride+x0:]
				for dx := range qrScale {
					line[dx] = 1
				}
			}
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("shortener: QR code: %w", err)
	}
	return buf.Bytes(), nil
}

// QRSVG renders a QR code of text as an SVG document: one path of unit
// squares, scalable without blur.
func QRSVG(text string) ([]byte, error) {
	bits, err := QRMatrix(text)
	if err != nil {
		return nil, err
	}
	n := len(bits) + 2*qrQuietZone
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" shape-rendering="crispEdges">`, n, n, n*qrScale, n*qrScale)
	b.WriteString(`<rect width="100%" height="100%" fill="#fff"/><path fill="#000" d="`)
	for y, row := range bits {
		for x := 0; x < len(row); x++ {
			if !row[x] {
				continue
			}
			run := 1
			for x+run < len(row) && row[x+run] {
				run++
			}
			fmt.Fprintf(&b, "M%d %dh%dv1h-%dz", x+qrQuietZone, y+qrQuietZone, run, run)
			x += run - 1
		}
	}
	b.WriteString(`"/></svg>` + "\n")
	return b.Bytes(), nil
}

// mediaQuality returns the quality (0 to 1000) that the Accept header
// gives the media type mt, with the most specific range winning
// (type/subtype over type/* over */*). An empty header accepts anything.
func mediaQuality(accept, mt string) int {
	if strings.TrimSpace(accept) == "" {
		return 1000
	}
	typ, _, _ := strings.Cut(mt, "/")
	best, bestSpec := 0, -1
	for part := range strings.SplitSeq(accept, ",") {
		r, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		spec := -1
		switch {
		case r == mt:
			spec = 2
		case r == typ+"/*":
			spec = 1
		case r == "*/*":
			spec = 0
		}
		if spec < bestSpec || spec < 0 {
			continue
		}
		q := 1000
		if qs, ok := params["q"]; ok {
			f, err := strconv.ParseFloat(qs, 64)
			if err != nil || f < 0 || f > 1 {
				continue
			}
			q = int(f * 1000)
		}
		if spec > bestSpec || q > best {
			best, bestSpec = q, spec
		}
	}
	return best
}

// serveQR answers GET /links/{code}/qr: a PNG, or an SVG when the Accept
// header prefers image/svg+xml; 406 when it accepts neither.
func (h *Handler) serveQR(w http.ResponseWriter, r *http.Request, c Caller) {
	if !noQuery(w, r) {
		return
	}
	code := r.PathValue("code")
	l, err := h.svc.LinkFor(r.Context(), code, c)
	if err != nil {
		h.writeLinkError(w, r, err)
		return
	}
	accept := r.Header.Get("Accept")
	pngQ, svgQ := mediaQuality(accept, "image/png"), mediaQuality(accept, "image/svg+xml")
	var (
		body []byte
		ct   string
	)
	switch {
	case pngQ == 0 && svgQ == 0:
		problem.Write(w, http.StatusNotAcceptable, "the QR code is available as image/png or image/svg+xml")
		return
	case svgQ > pngQ:
		body, err = QRSVG(h.svc.ShortURL(l.Code))
		ct = "image/svg+xml"
	default:
		body, err = QRPNG(h.svc.ShortURL(l.Code))
		ct = "image/png"
	}
	if err != nil {
		h.svc.log.ErrorContext(r.Context(), "shortener: render QR code", "code", code, "err", err)
		problem.Write(w, http.StatusInternalServerError, "the QR code could not be drawn")
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", ct)
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("Cache-Control", "private, no-cache")
	hdr.Set("Vary", "Accept")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
