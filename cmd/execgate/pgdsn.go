package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// dsnError is the refusal of a PostgreSQL connection string read from an
// environment variable: missing, unreadable, or read by the driver in a
// way that would put part of the password where an error shows it. Its
// message names the variable, never its value.
type dsnError struct {
	// Var is the name of the variable.
	Var string
	// msg says what is wrong and what to do.
	msg string
}

func (e *dsnError) Error() string { return e.msg }

// pgPoolConfig reads the connection string in the environment variable
// name (getenv reads it), parses it and checks it with checkDSNHosts.
// namedBy says what names the variable ("dsn_env", "--dsn-env") and whose
// environment it belongs in, for the message of a variable that is not
// set. No error repeats the value.
func pgPoolConfig(getenv func(string) string, name, namedBy, where string) (*pgxpool.Config, error) {
	dsn := getenv(name)
	if dsn == "" {
		return nil, &dsnError{Var: name, msg: fmt.Sprintf("the variable %s that %s names is not set or empty: set it to the PostgreSQL connection string %s", name, namedBy, where)}
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parser's message may quote part of the value.
		return nil, &dsnError{Var: name, msg: fmt.Sprintf("the value of %s is not a PostgreSQL connection string (URL or key=value form)", name)}
	}
	if err := checkDSNHosts(name, &cfg.ConnConfig.Config); err != nil {
		return nil, err
	}
	return cfg, nil
}

// checkDSNHosts refuses a parsed connection string whose host, or any
// fallback host, holds a character that no host name, IP address or
// socket directory holds, or whose database name holds an "@". That is
// how a URL whose password holds an unescaped "@" or "/" reads: the
// driver, as libpq, ends the user and password at the first "@" before
// a "/", so that the rest of the password becomes part of the host (or
// the database), which a connect error would then print.
func checkDSNHosts(name string, cc *pgconn.Config) error {
	hosts := []string{cc.Host}
	for _, fb := range cc.Fallbacks {
		hosts = append(hosts, fb.Host)
	}
	bad := strings.Contains(cc.Database, "@")
	for _, h := range hosts {
		bad = bad || !hostLooksRight(h)
	}
	if !bad {
		return nil
	}
	return &dsnError{Var: name, msg: fmt.Sprintf("the value of %s reads as a host or database name holding a character no host holds (an @ or / of the password, in a URL, ends the user and password early): percent-encode the password in the URL (@ as %%40, / as %%2F, : as %%3A, %% as %%25), or use the key=value form with password='...'", name)}
}

// hostLooksRight reports whether h can be a host of a connection
// string: a name or IPv4 address (letters, digits, '.', '-', '_'), an
// IPv6 address (hex digits, ':', '.', and '%' before a zone), or the
// absolute path of a Unix socket directory without '@' or control
// characters; "" leaves the driver's default.
func hostLooksRight(h string) bool {
	if strings.HasPrefix(h, "/") {
		return !strings.ContainsFunc(h, func(r rune) bool { return r == '@' || r < 0x20 || r == 0x7f })
	}
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune(".-_:%", r):
		default:
			return false
		}
	}
	return true
}

// pgConnect opens a pool on cfg and connects once, so that a database
// that cannot be reached, or refuses the login, is reported as such
// when serve starts; the error holds no copy of the password.
func pgConnect(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, scrubPassword(err, cfg)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, scrubPassword(err, cfg)
	}
	return pool, nil
}

// pgError is an error of the database or of connecting to it, as serve,
// check and audit verify print it: its message is the driver's with the
// password of the connection string, if any, cut out, in case a message
// of the server or the driver ever quotes it. It unwraps to the
// driver's error.
type pgError struct {
	msg string
	err error
}

func (e *pgError) Error() string { return e.msg }
func (e *pgError) Unwrap() error { return e.err }

// scrubPassword returns err as a *pgError whose message holds no copy of
// cfg's password, or nil for nil.
func scrubPassword(err error, cfg *pgxpool.Config) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if pw := cfg.ConnConfig.Password; pw != "" {
		msg = strings.ReplaceAll(msg, pw, "[password]")
	}
	var pe *pgError
	if errors.As(err, &pe) && pe.msg == msg {
		return err
	}
	return &pgError{msg: msg, err: err}
}

// openPGPool connects to the database whose connection string is in the
// variable dsnEnv of serve's environment (see pgPoolConfig), for the
// config key where names, and returns the pool and its configuration.
// Its errors start with where and never repeat the connection string.
func openPGPool(ctx context.Context, where string, getenv func(string) string, dsnEnv string) (*pgxpool.Pool, *pgxpool.Config, error) {
	cfg, err := pgPoolConfig(getenv, dsnEnv, "dsn_env", "in serve's environment")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", where, err)
	}
	pool, err := pgConnect(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: connecting to the database of %s: %w", where, dsnEnv, err)
	}
	return pool, cfg, nil
}
