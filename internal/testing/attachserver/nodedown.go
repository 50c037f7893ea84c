package attachserver

import (
	"fmt"
	"net"
	"net/url"
)

// SetNodeDown makes the server behave as an apiserver whose pods' node
// stopped (its kubelet and container runtime killed, the containers still
// running): on, every open attach session ends, and each new attach request
// is upgraded and then fails on its stream, as the apiserver's stream
// translator reports that it could not reach the kubelet (WebSocket v5), or
// is refused with a 500 (SPDY); off, attaches work again.
func (s *Server) SetNodeDown(on bool) error {
	var dead *url.URL
	if on {
		// An address nothing listens on: a port just released.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("attach server: reserve a dead port: %w", err)
		}
		dead = &url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/"}
		_ = ln.Close()
	}
	s.mu.Lock()
	s.deadKubelet = dead
	cs := make([]*Container, 0, len(s.containers))
	for _, c := range s.containers {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	if on {
		for _, c := range cs {
			c.breakAttaches()
		}
	}
	return nil
}

// kubeletDown returns the dead address attaches go to while the node is
// down (nil while it is up).
func (s *Server) kubeletDown() *url.URL {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadKubelet
}

// breakAttaches ends every open attach session of c.
func (c *Container) breakAttaches() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for s := range c.outs {
		s.fail()
	}
}
