// Command etcd runs the etcd server from the module graph Kubernetes already
// pins, so the test control plane needs no separately downloaded etcd.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
