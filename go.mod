module github.com/tether-ci/tether

go 1.26.0

require (
	github.com/creack/pty v1.1.24 // indirect
	golang.org/x/sync v0.24.0 // indirect
	k8s.io/api v0.34.4 // indirect
	k8s.io/apimachinery v0.34.4 // indirect
	k8s.io/apiserver v0.34.4 // indirect
	k8s.io/client-go v0.34.4 // indirect
	k8s.io/kubelet v0.34.4 // indirect
)
