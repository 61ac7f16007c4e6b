// ringside's Go reference contender: `echo PORT` serves echo with the net package and a
// goroutine per connection; `http PORT` serves the fixed response with net/http. Run it with
// GOMAXPROCS=1 so that it gets one core, like ringside's engines.
package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

var body = []byte("Hello, World!")

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "echo" && os.Args[1] != "http") {
		fmt.Fprintln(os.Stderr, "usage: ringside-go echo|http PORT")
		os.Exit(2)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:"+os.Args[2])
	if err != nil {
		log.Fatal(err)
	}
	if os.Args[1] == "echo" {
		serveEcho(listener)
	} else {
		log.Fatal(http.Serve(listener, http.HandlerFunc(hello)))
	}
}

func serveEcho(listener net.Listener) {
	for {
		conn, err := listener.Accept()
		if err != nil {
			// Out of file descriptors or a connection reset before accept: wait, go on (as
			// net/http does).
			if errors.Is(err, net.ErrClosed) {
				log.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		go func(conn net.Conn) {
			defer conn.Close()
			io.Copy(conn, conn)
		}(conn)
	}
}

func hello(w http.ResponseWriter, r *http.Request) {
	header := w.Header()
	// ringside's servers send no Date; a nil value keeps net/http from adding one.
	header["Date"] = nil
	header.Set("Server", "ringside")
	header.Set("Content-Type", "text/plain")
	header.Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}
