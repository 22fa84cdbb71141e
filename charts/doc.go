// Package charts holds the tests of what users install: the Helm chart under computedomain-operator/ (rendered
// with the helm binary that `make` installs into bin/), and the image the chart runs (the Dockerfile at the
// repository root). It has no code of its own.
package charts
