// Package deploy holds the deployment examples of idp-proxy and the
// shortener: Dockerfiles, a docker-compose stack with Keycloak and
// PostgreSQL, a Kubernetes sidecar example, and Helm charts (see
// README.md). It has no Go code; its tests check that the files parse and
// agree with each other, with the repository and with the proxy's
// configuration loader, and render the charts with helm.
package deploy
