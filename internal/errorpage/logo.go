package errorpage

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
)

// dataURI returns the logo as a data: URI, its type checked against its
// content (want: the type its file name says, "" for none).
func dataURI(logo []byte, want string) (template.URL, error) {
	if len(logo) == 0 {
		return "", errors.New("the logo is empty")
	}
	if len(logo) > MaxLogoBytes {
		return "", fmt.Errorf("the logo has %d bytes, more than the %d a page may carry inline", len(logo), MaxLogoBytes)
	}
	got := imageType(logo)
	switch {
	case got == "":
		return "", errors.New("the logo is not a PNG, JPEG, GIF, WebP or SVG image")
	case want != "" && got != want:
		return "", fmt.Errorf("the file name says %s, the content is %s", want, got)
	}
	// An SVG in an <img> runs no script and loads nothing: a data: URI
	// of any of these types is an image, never a document.
	return template.URL("data:" + got + ";base64," + base64.StdEncoding.EncodeToString(logo)), nil
}

// imageType sniffs an image's media type (net/http's sniffing for the
// raster formats; an SVG is XML text whose root is <svg>).
func imageType(b []byte) string {
	switch t := http.DetectContentType(b); t {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return t
	}
	if bytes.Contains(b[:min(len(b), 4096)], []byte("<svg")) && !bytes.ContainsRune(b, 0) &&
		strings.HasPrefix(http.DetectContentType(b), "text/") {
		return "image/svg+xml"
	}
	return ""
}
