// Copyright The computedomain-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package simcluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apiserver/pkg/storage/storagebackend"
)

// embeddedEtcd is a single-member etcd inside this process.
type embeddedEtcd struct {
	server *embed.Etcd
	// Storage is what kube-apiserver needs to reach it.
	Storage *storagebackend.Config
}

// startEtcd starts etcd on free ports of the loopback address host with its
// data under dir.
// fsync is off: the data is thrown away with the cluster.
func startEtcd(ctx context.Context, dir, host string) (*embeddedEtcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "etcd")
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create etcd data dir: %w", err)
	}
	cfg.UnsafeNoFsync = true
	urls, err := freeLocalURLs(host, 2)
	if err != nil {
		return nil, err
	}
	clientURL, peerURL := urls[0], urls[1]
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(zapcore.NewNopCore()))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd did not become ready within 60s")
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	return &embeddedEtcd{
		server: e,
		Storage: &storagebackend.Config{
			Type:      "etcd3",
			Prefix:    "/registry",
			Transport: storagebackend.TransportConfig{ServerList: []string{clientURL.String()}},
		},
	}, nil
}

// Close stops etcd and waits for it.
func (e *embeddedEtcd) Close() { e.server.Close() }

// freeLocalURLs picks n distinct ports that are free on host now; etcd binds
// them later.
func freeLocalURLs(host string, n int) ([]url.URL, error) {
	urls := make([]url.URL, 0, n)
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("find a free port on %s: %w", host, err)
		}
		// Open until all are picked, so that no two are the same.
		defer func() { _ = l.Close() }()
		urls = append(urls, url.URL{Scheme: "http", Host: l.Addr().String()})
	}
	return urls, nil
}
