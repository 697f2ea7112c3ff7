// Command faultproxy runs the fault-injection proxy of package faultproxy
// by hand: point a kuryr-controller at it (e.g. --set
// neutron.endpoint_override=http://127.0.0.1:9697) and change its faults
// while it runs:
//
//	curl -X PUT localhost:9697/_faultproxy/faults -d '{"errorRate":0.05,"commitDropRate":0.05}'
//	curl localhost:9697/_faultproxy/stats
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/kuryr-k8s/kuryr/test/faultproxy"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9697", "address to serve on")
	upstream := flag.String("upstream", "http://127.0.0.1:9696", "the API to forward to")
	seed := flag.Int64("seed", time.Now().UnixNano(), "seed of the fault draws")
	flag.Parse()
	p, err := faultproxy.New(*upstream, *seed)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("faultproxy: %s -> %s (control under %s)", *listen, *upstream, faultproxy.ControlPrefix)
	srv := &http.Server{Addr: *listen, Handler: p, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
