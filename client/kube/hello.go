package kube

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/tether-ci/tether/protocol"
)

// helloLogLimit bounds how much of a container's log Hello reads: the
// hello is the shim's first record, after at most a few diagnostics.
const helloLogLimit = 64 << 10

// Hello reads the hello record of the shim in the pod's Container (""
// means BuildContainer) from the container's log (pods/log, followed
// until the record is there): what the shim reported when it started —
// its version, shell, and how its command aliases resolved — for one GET
// and no attach. ctx bounds the wait (a container that has not started
// yet has no log). Lines that are no hello (the shim's diagnostics, in a
// log whose streams the API server merges) are skipped.
func (p *Pod) Hello(ctx context.Context) (protocol.Hello, error) {
	container := cmp.Or(p.Container, BuildContainer)
	limit := int64(helloLogLimit)
	rc, err := p.Client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{
		Container: container, Follow: true, LimitBytes: &limit,
	}).Stream(ctx)
	if err != nil {
		return protocol.Hello{}, fmt.Errorf("read the log of container %s of pod %s/%s for its shim's hello: %w", container, p.Namespace, p.Name, err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 0, 4096), helloLogLimit)
	for sc.Scan() {
		line := append(sc.Bytes(), '\n')
		rec, _, err := protocol.Parse(line, nil)
		if err != nil || rec.Type != protocol.TypeHello || rec.Seq != 0 {
			continue
		}
		var h protocol.Hello
		if err := json.Unmarshal(rec.Payload, &h); err != nil {
			return h, fmt.Errorf("container %s of pod %s/%s: its shim's hello record: %w", container, p.Namespace, p.Name, err)
		}
		return h, nil
	}
	err = sc.Err()
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = fmt.Errorf("it ended (or passed %d bytes) before one", helloLogLimit)
	}
	return protocol.Hello{}, fmt.Errorf("no shim hello in the log of container %s of pod %s/%s: %w", container, p.Namespace, p.Name, err)
}
