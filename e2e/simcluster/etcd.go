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

// startEtcd starts etcd on free localhost ports with its data under dir.
// fsync is off: the data is thrown away with the cluster.
func startEtcd(ctx context.Context, dir string) (*embeddedEtcd, error) {
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "etcd")
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create etcd data dir: %w", err)
	}
	cfg.UnsafeNoFsync = true
	clientURL, err := freeLocalURL()
	if err != nil {
		return nil, err
	}
	peerURL, err := freeLocalURL()
	if err != nil {
		return nil, err
	}
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

func freeLocalURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}
