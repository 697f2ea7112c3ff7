// Command testapp is the part of the e2e test image busybox cannot do: a UDP
// responder and client (Debian's busybox nc has no UDP), and an HTTPS client
// that talks to the API server with the pod's service-account token.
//
//	testapp udp-serve PORT        answer every datagram with the hostname
//	testapp udp-ask ADDR N        N datagrams from N source ports; print the answers
//	testapp kube-get URL          GET with the pod's token and CA; print the body
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func main() {
	if len(os.Args) < 3 {
		fail(fmt.Errorf("usage: testapp udp-serve PORT | udp-ask ADDR N | kube-get URL"))
	}
	var err error
	switch os.Args[1] {
	case "udp-serve":
		err = udpServe(os.Args[2])
	case "udp-ask":
		n := 1
		if len(os.Args) > 3 {
			n, _ = strconv.Atoi(os.Args[3])
		}
		err = udpAsk(os.Args[2], n)
	case "kube-get":
		err = kubeGet(os.Args[2])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testapp:", err)
	os.Exit(1)
}

func udpServe(port string) error {
	host, _ := os.Hostname()
	c, err := net.ListenPacket("udp", ":"+port)
	if err != nil {
		return err
	}
	buf := make([]byte, 1500)
	for {
		_, from, err := c.ReadFrom(buf)
		if err != nil {
			return err
		}
		_, _ = c.WriteTo([]byte(host), from)
	}
}

// udpAsk prints one line per answer received (a timeout prints "-").
func udpAsk(addr string, n int) error {
	answered := 0
	for i := 0; i < n; i++ {
		c, err := net.Dial("udp", addr)
		if err != nil {
			return err
		}
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 256)
		_, err = c.Write([]byte("who?"))
		k := 0
		if err == nil {
			k, err = c.Read(buf)
		}
		c.Close()
		if err != nil {
			fmt.Println("-")
			continue
		}
		answered++
		fmt.Println(strings.TrimSpace(string(buf[:k])))
	}
	if answered == 0 {
		return fmt.Errorf("no answer from %s", addr)
	}
	return nil
}

func kubeGet(url string) error {
	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("no certificate in %s/ca.crt", saDir)
	}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := cl.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d\n%s\n", resp.StatusCode, body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
