package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestProposeThenExecute runs both halves, each with a pool of its own as
// two processes would have, on a table of the test's own.
func TestProposeThenExecute(t *testing.T) {
	dsn := os.Getenv("EXECGATE_PG_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("EXECGATE_PG_DSN is not set, and CI=true: CI must run the PostgreSQL tests")
		}
		t.Skip("set EXECGATE_PG_DSN=postgres://USER@HOST:PORT/DB?sslmode=disable to run this example's test")
	}
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	table := "execgate_example_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		pool, err := pgxpool.New(context.Background(), dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer pool.Close()
		if _, err := pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize()+", "+pgx.Identifier{table + "_spent"}.Sanitize()); err != nil {
			t.Error(err)
		}
	})

	var approval, log bytes.Buffer
	if err := run(ctx, "propose", dsn, table, nil, &approval, &log); err != nil {
		t.Fatalf("propose: %v", err)
	}
	if !strings.Contains(approval.String(), `"name": "echo.deploy"`) || !strings.Contains(log.String(), "proposed ") {
		t.Errorf("propose printed %q, logged %q", approval.String(), log.String())
	}
	var out bytes.Buffer
	if err := run(ctx, "execute", dsn, table, bytes.NewReader(approval.Bytes()), &out, &log); err != nil {
		t.Fatalf("execute: %v", err)
	}
	if want := `ran echo.deploy ["deploying" "api" "v1.4.2"]: exit 0, stdout "deploying api v1.4.2\n"`; strings.TrimSpace(out.String()) != want {
		t.Errorf("execute printed %q; want %q", out.String(), want)
	}
	err := run(ctx, "execute", dsn, table, bytes.NewReader(approval.Bytes()), &out, &log)
	if err == nil || !strings.Contains(err.Error(), "refused: unknown") {
		t.Errorf("second execute: %v; want a refusal", err)
	}
}
