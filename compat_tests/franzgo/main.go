// franz-go driver for kbroker's compat suite (compat_tests/test_franz_go.py).
//
// Input (stdin): {"brokers": "host:port", "ops": [{"op": "<name>", ...}, ...],
//
//	"security": {"ca": "<PEM>", "mechanism": "SCRAM-SHA-512", "username", "password"}}
//
// ("security" is optional: TLS when "ca" is set, SASL PLAIN/SCRAM when "mechanism" is.)
// Output (stdout): one JSON array, one entry per op: {"ok": <result>} or
// {"error": {"type", "code", "message", "errors"}}. Ops run in order; an op that fails does not
// stop the ones after it. Admin ops share one client; produce/consume ops build their own client
// with the options they ask for. FRANZGO_LOG=debug|info|warn logs franz-go to stderr.
//
// Keys, values and header values are UTF-8 strings (null for none); timestamps are ms.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// waitForLeaders lists the topic again every 100 ms, for up to 20 s, until the broker's
// metadata shows all its partitions with a leader, as kafkajs's createTopics does: a broker
// applies a new topic when its metadata log catches up, on Kafka after CreateTopics answered,
// and an op right after would meet UNKNOWN_TOPIC_OR_PARTITION. The ops after it show what
// is missing if it never comes.
func waitForLeaders(ctx context.Context, adm *kadm.Client, topic string, partitions int32) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		listed, err := adm.ListTopics(ctx, topic)
		if err == nil {
			if t, ok := listed[topic]; ok && t.Err == nil && int32(len(t.Partitions)) == partitions {
				led := true
				for _, p := range t.Partitions {
					led = led && p.Err == nil && p.Leader >= 0
				}
				if led {
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Security: how to connect to a TLS and/or SASL listener.
type Security struct {
	CA        string `json:"ca"`
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}

func (s *Security) opts() ([]kgo.Opt, error) {
	var out []kgo.Opt
	if s == nil {
		return out, nil
	}
	if s.CA != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(s.CA)) {
			return nil, fmt.Errorf("bad CA PEM")
		}
		out = append(out, kgo.DialTLSConfig(&tls.Config{RootCAs: pool}))
	}
	switch s.Mechanism {
	case "":
	case "PLAIN":
		out = append(out, kgo.SASL(plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()))
	case "SCRAM-SHA-256":
		out = append(out, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		out = append(out, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("unknown mechanism %s", s.Mechanism)
	}
	return out, nil
}

type Message struct {
	Key       *string     `json:"key"`
	Value     *string     `json:"value"`
	Headers   [][2]string `json:"headers"`
	Timestamp int64       `json:"timestamp"`
	Partition *int32      `json:"partition"`
}

type TopicSpec struct {
	Topic             string            `json:"topic"`
	NumPartitions     int32             `json:"numPartitions"`
	ReplicationFactor int16             `json:"replicationFactor"`
	Configs           map[string]string `json:"configs"`
}

type PartOffset struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata"`
}

type Op struct {
	Op              string            `json:"op"`
	Topics          []TopicSpec       `json:"topics"`
	Names           []string          `json:"names"`
	Topic           string            `json:"topic"`
	Count           int               `json:"count"`
	Timestamp       int64             `json:"timestamp"`
	Partitions      []PartOffset      `json:"partitions"`
	Configs         map[string]string `json:"configs"`
	GroupIDs        []string          `json:"groupIds"`
	GroupID         string            `json:"groupId"`
	Messages        []Message         `json:"messages"`
	Compression     string            `json:"compression"`
	Acks            *int              `json:"acks"`
	Idempotent      *bool             `json:"idempotent"`
	TransactionalID string            `json:"transactionalId"`
	Abort           bool              `json:"abort"`
	MaxBytes        int32             `json:"maxRecordBytes"`
	ReadUncommitted bool              `json:"readUncommitted"`
	TimeoutMs       int               `json:"timeoutMs"`
	MinDurationMs   int               `json:"minDurationMs"`
	Commit          bool              `json:"commit"`
	Balancer        string            `json:"balancer"`
	Assign          []PartOffset      `json:"assign"`
	NoReset         bool              `json:"noReset"`
	InstanceID      string            `json:"instanceId"`
	ServerSide      bool              `json:"serverSide"`
	AllowAutoCreate bool              `json:"allowAutoCreate"`
}

type Driver struct {
	security *Security
	brokers  []string
	cl       *kgo.Client
	adm      *kadm.Client
}

func errInfo(err error) map[string]any {
	if err == nil {
		return nil
	}
	out := map[string]any{"message": err.Error()}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		out["type"] = ke.Message
		out["code"] = ke.Code
	} else if errors.Is(err, context.DeadlineExceeded) {
		out["type"] = "TIMEOUT"
	}
	var se *kadm.ShardErrors
	if errors.As(err, &se) {
		var nested []any
		for _, e := range se.Errs {
			nested = append(nested, errInfo(e.Err))
		}
		out["errors"] = nested
	}
	return out
}

func errType(err error) any {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func logger() kgo.Opt {
	levels := map[string]kgo.LogLevel{"debug": kgo.LogLevelDebug, "info": kgo.LogLevelInfo, "warn": kgo.LogLevelWarn}
	level, ok := levels[strings.ToLower(os.Getenv("FRANZGO_LOG"))]
	if !ok {
		level = kgo.LogLevelNone
	}
	return kgo.WithLogger(kgo.BasicLogger(os.Stderr, level, nil))
}

func (d *Driver) client(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(d.brokers...), kgo.ClientID("compat-franzgo"), logger(),
		kgo.RequestRetries(3), kgo.RetryTimeout(15 * time.Second)}
	sec, err := d.security.opts()
	if err != nil {
		return nil, err
	}
	base = append(base, sec...)
	return kgo.NewClient(append(base, opts...)...)
}

func (d *Driver) admin() (*kadm.Client, error) {
	if d.adm == nil {
		cl, err := d.client()
		if err != nil {
			return nil, err
		}
		d.cl = cl
		d.adm = kadm.NewClient(cl)
	}
	return d.adm, nil
}

func strPtr(s string) *string { return &s }

func ctxFor(op Op) (context.Context, context.CancelFunc) {
	timeout := 30 * time.Second
	if op.TimeoutMs > 0 {
		timeout = time.Duration(op.TimeoutMs)*time.Millisecond + 15*time.Second
	}
	return context.WithTimeout(context.Background(), timeout)
}

// perName answers an admin call whose results are keyed by name (topic or group): the
// call's error, or name → describe(result).
func perName[M ~map[string]R, R any](res M, err error, describe func(R) any) (any, error) {
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for name, r := range res {
		out[name] = describe(r)
	}
	return out, nil
}

func (d *Driver) run(op Op) (any, error) {
	ctx, cancel := ctxFor(op)
	defer cancel()
	switch op.Op {
	case "produce":
		return d.produce(ctx, op)
	case "consume":
		return d.consume(ctx, op)
	}
	adm, err := d.admin()
	if err != nil {
		return nil, err
	}
	switch op.Op {
	case "createTopics":
		var out []any
		for _, t := range op.Topics {
			configs := map[string]*string{}
			for k, v := range t.Configs {
				configs[k] = strPtr(v)
			}
			rf := t.ReplicationFactor
			if rf == 0 {
				rf = 1
			}
			np := t.NumPartitions
			if np == 0 {
				np = 1
			}
			res, err := adm.CreateTopics(ctx, np, rf, configs, t.Topic)
			if err != nil {
				return nil, err
			}
			r := res[t.Topic]
			if r.Err == nil {
				waitForLeaders(ctx, adm, t.Topic, r.NumPartitions)
			}
			out = append(out, map[string]any{"topic": t.Topic, "error": errType(r.Err),
				"numPartitions": r.NumPartitions, "replicationFactor": r.ReplicationFactor})
		}
		return out, nil
	case "deleteTopics":
		res, err := adm.DeleteTopics(ctx, op.Names...)
		return perName(res, err, func(r kadm.DeleteTopicResponse) any { return errType(r.Err) })
	case "createPartitions":
		res, err := adm.UpdatePartitions(ctx, op.Count, op.Topic)
		if err != nil {
			return nil, err
		}
		return errType(res[op.Topic].Err), nil
	case "listTopics":
		res, err := adm.ListTopics(ctx, op.Names...)
		if err != nil {
			return nil, err
		}
		var out []any
		for _, t := range res.Sorted() {
			var parts []any
			for _, p := range t.Partitions.Sorted() {
				parts = append(parts, map[string]any{"partition": p.Partition, "leader": p.Leader,
					"replicas": p.Replicas, "isr": p.ISR, "error": errType(p.Err)})
			}
			out = append(out, map[string]any{"topic": t.Topic, "error": errType(t.Err), "partitions": parts})
		}
		return out, nil
	case "listOffsets":
		start, err := adm.ListStartOffsets(ctx, op.Topic)
		if err != nil {
			return nil, err
		}
		end, err := adm.ListEndOffsets(ctx, op.Topic)
		if err != nil {
			return nil, err
		}
		var out []any
		for p := int32(0); ; p++ {
			s, ok := start.Lookup(op.Topic, p)
			if !ok {
				break
			}
			e, _ := end.Lookup(op.Topic, p)
			out = append(out, map[string]any{"partition": p, "start": s.Offset, "end": e.Offset,
				"error": errType(errors.Join(s.Err, e.Err))})
		}
		return out, nil
	case "listOffsetsAfterMilli":
		res, err := adm.ListOffsetsAfterMilli(ctx, op.Timestamp, op.Topic)
		if err != nil {
			return nil, err
		}
		var out []any
		for p := int32(0); ; p++ {
			o, ok := res.Lookup(op.Topic, p)
			if !ok {
				break
			}
			out = append(out, map[string]any{"partition": p, "offset": o.Offset, "timestamp": o.Timestamp,
				"error": errType(o.Err)})
		}
		return out, nil
	case "deleteRecords":
		var offsets kadm.Offsets
		for _, p := range op.Partitions {
			offsets.AddOffset(op.Topic, p.Partition, p.Offset, -1)
		}
		res, err := adm.DeleteRecords(ctx, offsets)
		if err != nil {
			return nil, err
		}
		var out []any
		for _, p := range op.Partitions {
			r, _ := res.Lookup(op.Topic, p.Partition)
			out = append(out, map[string]any{"partition": p.Partition, "lowWatermark": r.LowWatermark,
				"error": errType(r.Err)})
		}
		return out, nil
	case "describeTopicConfigs":
		res, err := adm.DescribeTopicConfigs(ctx, op.Names...)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		for _, rc := range res {
			configs := map[string]any{}
			for _, c := range rc.Configs {
				configs[c.Key] = map[string]any{"value": c.Value, "source": c.Source.String(), "sensitive": c.Sensitive}
			}
			out[rc.Name] = map[string]any{"error": errType(rc.Err), "configs": configs}
		}
		return out, nil
	case "alterTopicConfigs":
		var alters []kadm.AlterConfig
		for k, v := range op.Configs {
			if v == "" {
				alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			} else {
				alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: strPtr(v)})
			}
		}
		res, err := adm.AlterTopicConfigs(ctx, alters, op.Topic)
		if err != nil {
			return nil, err
		}
		for _, r := range res {
			if r.Err != nil {
				return nil, r.Err
			}
		}
		return true, nil
	case "listGroups":
		res, err := adm.ListGroups(ctx)
		return perName(res, err, func(g kadm.ListedGroup) any {
			return map[string]any{"protocolType": g.ProtocolType, "state": g.State}
		})
	case "describeGroups":
		res, err := adm.DescribeGroups(ctx, op.GroupIDs...)
		return perName(res, err, func(g kadm.DescribedGroup) any {
			var members []any
			for _, m := range g.Members {
				assigned := map[string][]int32{}
				if ca, ok := m.Assigned.AsConsumer(); ok {
					for _, t := range ca.Topics {
						ps := append([]int32(nil), t.Partitions...)
						sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
						assigned[t.Topic] = ps
					}
				}
				members = append(members, map[string]any{"memberId": m.MemberID, "clientId": m.ClientID,
					"instanceId": m.InstanceID, "assigned": assigned})
			}
			return map[string]any{"state": g.State, "protocolType": g.ProtocolType,
				"protocol": g.Protocol, "members": members, "error": errType(g.Err)}
		})
	case "deleteGroups":
		res, err := adm.DeleteGroups(ctx, op.GroupIDs...)
		return perName(res, err, func(r kadm.DeleteGroupResponse) any { return errType(r.Err) })
	case "fetchOffsets":
		res, err := adm.FetchOffsets(ctx, op.GroupID)
		if err != nil {
			return nil, err
		}
		var out []any
		res.Each(func(o kadm.OffsetResponse) {
			out = append(out, map[string]any{"topic": o.Topic, "partition": o.Partition, "offset": o.At,
				"metadata": o.Metadata, "error": errType(o.Err)})
		})
		sort.Slice(out, func(i, j int) bool {
			a, b := out[i].(map[string]any), out[j].(map[string]any)
			return a["topic"].(string) < b["topic"].(string) ||
				(a["topic"] == b["topic"] && a["partition"].(int32) < b["partition"].(int32))
		})
		return out, nil
	case "commitOffsets":
		var offsets kadm.Offsets
		for _, p := range op.Partitions {
			offsets.Add(kadm.Offset{Topic: op.Topic, Partition: p.Partition, At: p.Offset, LeaderEpoch: -1, Metadata: p.Metadata})
		}
		res, err := adm.CommitOffsets(ctx, op.GroupID, offsets)
		if err != nil {
			return nil, err
		}
		return nil, res.Error()
	}
	return nil, fmt.Errorf("unknown op %q", op.Op)
}

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("unknown codec %q", name)
}

func (d *Driver) produce(ctx context.Context, op Op) (any, error) {
	c, err := codec(op.Compression)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{kgo.ProducerBatchCompression(c), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.RecordRetries(3)} // no delivery timeout: it counts from the record's own timestamp
	if !op.AllowAutoCreate {
		opts = append(opts, kgo.UnknownTopicRetries(2))
	} else {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	if op.MaxBytes > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(op.MaxBytes), kgo.BrokerMaxWriteBytes(op.MaxBytes*2+1<<20))
	}
	idempotent := op.Idempotent == nil || *op.Idempotent // franz-go's default
	if op.Acks != nil && *op.Acks != -1 {
		idempotent = false
		if *op.Acks == 0 {
			opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
		} else {
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
		}
	}
	if !idempotent && op.TransactionalID == "" {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if op.TransactionalID != "" {
		opts = append(opts, kgo.TransactionalID(op.TransactionalID), kgo.TransactionTimeout(30*time.Second))
	}
	cl, err := d.client(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var records []*kgo.Record
	for _, m := range op.Messages {
		r := &kgo.Record{Topic: op.Topic}
		if m.Key != nil {
			r.Key = []byte(*m.Key)
		}
		if m.Value != nil {
			r.Value = []byte(*m.Value)
		}
		for _, h := range m.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
		}
		if m.Timestamp != 0 {
			r.Timestamp = time.UnixMilli(m.Timestamp)
		}
		if m.Partition != nil {
			r.Partition = *m.Partition
		}
		records = append(records, r)
	}
	if op.TransactionalID != "" {
		if err := cl.BeginTransaction(); err != nil {
			return nil, err
		}
	}
	results := cl.ProduceSync(ctx, records...)
	if op.TransactionalID != "" {
		commit := kgo.TryCommit
		if op.Abort || results.FirstErr() != nil {
			commit = kgo.TryAbort
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			return nil, err
		}
	}
	if err := results.FirstErr(); err != nil {
		return nil, err
	}
	var out []any
	for _, r := range results {
		out = append(out, map[string]any{"partition": r.Record.Partition, "offset": r.Record.Offset,
			"timestamp": r.Record.Timestamp.UnixMilli(), "value": nullable(r.Record.Value)})
	}
	return out, nil
}

func headersOut(r *kgo.Record) [][2]string {
	out := [][2]string{}
	for _, h := range r.Headers {
		out = append(out, [2]string{h.Key, string(h.Value)})
	}
	return out
}

func nullable(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// consume reads with a group (GroupID set) or from assigned partitions (Assign) until Count
// records arrived or TimeoutMs passed; members of multi-member tests stay MinDurationMs.
func (d *Driver) consume(ctx context.Context, op Op) (any, error) {
	var assignments []any
	reset := kgo.NewOffset().AtStart()
	if op.NoReset {
		reset = kgo.NoResetOffset()
	}
	opts := []kgo.Opt{kgo.ConsumeResetOffset(reset), kgo.FetchMaxWait(500 * time.Millisecond)}
	if !op.ReadUncommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if op.GroupID != "" {
		opts = append(opts, kgo.ConsumerGroup(op.GroupID), kgo.ConsumeTopics(op.Topic),
			kgo.SessionTimeout(10*time.Second), kgo.RebalanceTimeout(10*time.Second),
			kgo.HeartbeatInterval(500*time.Millisecond), kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				for t, ps := range m {
					ps = append([]int32(nil), ps...)
					sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
					assignments = append(assignments, map[string]any{"topic": t, "partitions": ps})
				}
			}))
		switch op.Balancer {
		case "", "cooperative-sticky":
			opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()))
		case "range":
			opts = append(opts, kgo.Balancers(kgo.RangeBalancer()))
		case "roundrobin":
			opts = append(opts, kgo.Balancers(kgo.RoundRobinBalancer()))
		case "sticky":
			opts = append(opts, kgo.Balancers(kgo.StickyBalancer()))
		}
		if op.InstanceID != "" {
			opts = append(opts, kgo.InstanceID(op.InstanceID))
		}
		if op.ServerSide {
			// KIP-848: ConsumerGroupHeartbeat, the broker assigns (range/sticky balancers)
			opts = append(opts, kgo.ServerSideBalancer())
		}
	} else {
		parts := map[int32]kgo.Offset{}
		for _, a := range op.Assign {
			parts[a.Partition] = kgo.NewOffset().At(a.Offset)
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{op.Topic: parts}))
	}
	cl, err := d.client(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	timeout := time.Duration(op.TimeoutMs) * time.Millisecond
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	started := time.Now()
	deadline := started.Add(timeout)
	records := []any{}
	var fetchErrors []any
	for time.Now().Before(deadline) && (op.Count == 0 || len(records) < op.Count) {
		pctx, pcancel := context.WithDeadline(ctx, deadline)
		fetches := cl.PollFetches(pctx)
		pcancel()
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			fetchErrors = append(fetchErrors, map[string]any{"partition": fe.Partition, "error": errType(fe.Err)})
		}
		fetches.EachRecord(func(r *kgo.Record) {
			records = append(records, map[string]any{"topic": r.Topic, "partition": r.Partition,
				"offset": r.Offset, "key": nullable(r.Key), "value": nullable(r.Value),
				"headers": headersOut(r), "timestamp": r.Timestamp.UnixMilli(), "leaderEpoch": r.LeaderEpoch})
		})
		if len(fetchErrors) > 0 && op.NoReset {
			break
		}
	}
	if rest := time.Duration(op.MinDurationMs)*time.Millisecond - time.Since(started); rest > 0 {
		end := time.Now().Add(rest)
		for time.Now().Before(end) {
			pctx, pcancel := context.WithDeadline(ctx, end)
			fetches := cl.PollFetches(pctx)
			pcancel()
			fetches.EachRecord(func(r *kgo.Record) {
				records = append(records, map[string]any{"topic": r.Topic, "partition": r.Partition,
					"offset": r.Offset, "key": nullable(r.Key), "value": nullable(r.Value),
					"headers": headersOut(r), "timestamp": r.Timestamp.UnixMilli()})
			})
		}
	}
	if op.GroupID != "" && op.Commit {
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			return nil, err
		}
	}
	if op.GroupID != "" {
		cl.LeaveGroup()
	}
	return map[string]any{"records": records, "assignments": assignments, "errors": fetchErrors}, nil
}

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading stdin:", err)
		os.Exit(2)
	}
	var input struct {
		Brokers  string    `json:"brokers"`
		Ops      []Op      `json:"ops"`
		Security *Security `json:"security"`
	}
	if err := json.Unmarshal(raw, &input); err != nil {
		fmt.Fprintln(os.Stderr, "bad input:", err)
		os.Exit(2)
	}
	d := &Driver{brokers: strings.Split(input.Brokers, ","), security: input.Security}
	results := []any{}
	for _, op := range input.Ops {
		value, err := d.run(op)
		if err != nil {
			results = append(results, map[string]any{"error": errInfo(err)})
		} else {
			results = append(results, map[string]any{"ok": value})
		}
	}
	if d.cl != nil {
		d.cl.Close()
	}
	out, _ := json.Marshal(results)
	os.Stdout.Write(append(out, '\n'))
}
