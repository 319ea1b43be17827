// Command franzgo-sr drives franz-go's schema registry client (pkg/sr) and its kgo producer and
// consumer against a kbroker with the registry on, for tests/schema_registry/test_franzgo.py.
//
// Usage: franzgo-sr REGISTRY_URL BOOTSTRAP SUBJECT TOPIC
//
// It registers an Avro schema under SUBJECT, looks it up, reads it back by id and by version,
// checks a compatible and an incompatible evolution, lists subjects, reads the compatibility
// level, then produces three records framed with Confluent's 5-byte header (sr.ConfluentHeader
// through sr.Serde) to TOPIC and consumes them back, decoding through the same Serde. Every
// result is printed as one JSON object on stdout; the Python test asserts on it. A step that
// fails prints {"error": ...} and exits 1.
//
// The Avro binary encoding of the test's record (a string and an int) is written here by hand:
// a zigzag varint length and the bytes for the string, a zigzag varint for the int (Avro 1.11
// specification, "Binary Encoding"). pkg/sr leaves encoding to the caller.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

const userSchema = `{"type":"record","name":"User","namespace":"kbroker.test","fields":[` +
	`{"name":"name","type":"string"},{"name":"favorite_number","type":"int"}]}`

// A compatible evolution under BACKWARD: a new field with a default.
const userSchemaV2 = `{"type":"record","name":"User","namespace":"kbroker.test","fields":[` +
	`{"name":"name","type":"string"},{"name":"favorite_number","type":"int"},` +
	`{"name":"email","type":"string","default":""}]}`

// An incompatible one: a new field without a default.
const userSchemaBad = `{"type":"record","name":"User","namespace":"kbroker.test","fields":[` +
	`{"name":"name","type":"string"},{"name":"favorite_number","type":"int"},` +
	`{"name":"age","type":"int"}]}`

type user struct {
	Name           string `json:"name"`
	FavoriteNumber int32  `json:"favorite_number"`
}

func encodeUser(v any) ([]byte, error) {
	u, ok := v.(*user)
	if !ok {
		return nil, fmt.Errorf("cannot encode %T", v)
	}
	b := binary.AppendVarint(nil, int64(len(u.Name))) // Go's signed varint is Avro's zigzag
	b = append(b, u.Name...)
	b = binary.AppendVarint(b, int64(u.FavoriteNumber))
	return b, nil
}

func decodeUser(b []byte, v any) error {
	u, ok := v.(*user)
	if !ok {
		return fmt.Errorf("cannot decode into %T", v)
	}
	n, used := binary.Varint(b)
	if used <= 0 || n < 0 || int(n) > len(b)-used {
		return errors.New("bad string length")
	}
	u.Name = string(b[used : used+int(n)])
	b = b[used+int(n):]
	num, used := binary.Varint(b)
	if used <= 0 || used != len(b) {
		return errors.New("bad int")
	}
	u.FavoriteNumber = int32(num)
	return nil
}

func fail(step string, err error) {
	out := map[string]any{"error": err.Error(), "step": step}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		out["status"] = re.StatusCode
		out["error_code"] = re.ErrorCode
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: franzgo-sr REGISTRY_URL BOOTSTRAP SUBJECT TOPIC")
		os.Exit(2)
	}
	url, bootstrap, subject, topic := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	result := map[string]any{}

	rcl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		fail("client", err)
	}
	types, err := rcl.SupportedTypes(ctx)
	if err != nil {
		fail("types", err)
	}
	result["types"] = types

	created, err := rcl.CreateSchema(ctx, subject, sr.Schema{Schema: userSchema, Type: sr.TypeAvro})
	if err != nil {
		fail("register", err)
	}
	result["registered"] = map[string]any{"id": created.ID, "version": created.Version, "subject": created.Subject}

	found, err := rcl.LookupSchema(ctx, subject, sr.Schema{Schema: userSchema, Type: sr.TypeAvro})
	if err != nil {
		fail("lookup", err)
	}
	result["lookup"] = map[string]any{"id": found.ID, "version": found.Version, "subject": found.Subject}

	byID, err := rcl.SchemaByID(ctx, created.ID)
	if err != nil {
		fail("by_id", err)
	}
	result["by_id"] = map[string]any{"schema": byID.Schema, "type": byID.Type.String()}

	byVersion, err := rcl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		fail("by_version", err)
	}
	result["latest"] = map[string]any{"id": byVersion.ID, "version": byVersion.Version}

	good, err := rcl.CheckCompatibility(ctx, subject, -1, sr.Schema{Schema: userSchemaV2, Type: sr.TypeAvro})
	if err != nil {
		fail("check_good", err)
	}
	bad, err := rcl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), subject, -1,
		sr.Schema{Schema: userSchemaBad, Type: sr.TypeAvro})
	if err != nil {
		fail("check_bad", err)
	}
	result["compatible"] = good.Is
	result["incompatible"] = map[string]any{"is": bad.Is, "messages": bad.Messages}

	levels := rcl.Compatibility(ctx)
	if len(levels) != 1 || levels[0].Err != nil {
		fail("config", fmt.Errorf("global compatibility: %+v", levels))
	}
	result["global_level"] = levels[0].Level.String()

	subjects, err := rcl.Subjects(ctx)
	if err != nil {
		fail("subjects", err)
	}
	result["subjects"] = subjects

	_, err = rcl.SchemaByVersion(ctx, subject+"-missing", 1)
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		fail("missing", fmt.Errorf("expected a ResponseError, got %v", err))
	}
	result["missing"] = map[string]any{"status": re.StatusCode, "error_code": re.ErrorCode}

	// Records framed with the 5-byte header, through kgo.
	var serde sr.Serde
	serde.Register(created.ID, &user{}, sr.EncodeFn(encodeUser), sr.DecodeFn(decodeUser))
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		fail("kgo", err)
	}
	defer cl.Close()
	sent := []user{{"ada", 1}, {"grace", 42}, {"edsger", -7}}
	for i := range sent {
		value, err := serde.Encode(&sent[i])
		if err != nil {
			fail("encode", err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
			fail("produce", err)
		}
	}
	var got []user
	var headers []string
	for len(got) < len(sent) {
		fetches := cl.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			fail("consume", errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			var u user
			if err := serde.Decode(r.Value, &u); err != nil {
				fail("decode", err)
			}
			headers = append(headers, fmt.Sprintf("%x", r.Value[:5]))
			got = append(got, u)
		})
	}
	result["consumed"] = got
	result["headers"] = headers
	_ = json.NewEncoder(os.Stdout).Encode(result)
}
