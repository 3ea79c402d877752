package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/execgate/execgate"
	"github.com/execgate/execgate/audit/otelaudit"
)

// otelServiceName is the service.name of serve's spans unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names another.
const otelServiceName = "execgate"

// otelShutdownGrace bounds the export of the spans still held when serve
// stops.
const otelShutdownGrace = 5 * time.Second

// telemetry is the OpenTelemetry export of serve --otel: a span per
// call (audit/otelaudit), batched and sent over OTLP/HTTP. The zero
// telemetry exports nothing and starts nothing.
type telemetry struct {
	tp *sdktrace.TracerProvider // nil: nothing is exported
}

// otelExports reports whether --otel is to export, by the standard
// variables getenv reads: not when OTEL_SDK_DISABLED is true or
// OTEL_TRACES_EXPORTER is none. An exporter other than otlp, or an OTLP
// protocol other than HTTP's, is an error: this binary has no other.
// Values are not repeated in errors.
func otelExports(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) {
	case "", "otlp":
	case "none":
		return false, nil
	default:
		return false, errors.New("OTEL_TRACES_EXPORTER is not otlp or none: serve --otel exports traces over OTLP only")
	}
	name, protocol := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if protocol == "" {
		name, protocol = "OTEL_EXPORTER_OTLP_PROTOCOL", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch protocol {
	case "", "http/protobuf", "http/json":
		return true, nil
	case "grpc":
		return false, fmt.Errorf("%s is grpc: serve --otel exports over OTLP/HTTP only (http/protobuf, the default, or http/json); point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP port (4318 by default)", name)
	}
	return false, fmt.Errorf("%s is not http/protobuf or http/json, the OTLP protocols serve --otel exports with", name)
}

// startTelemetry starts the export of serve --otel, configured by the
// standard OTEL_* variables of the process (getenv reads them; the SDK
// and the exporter read the rest themselves). Without on, or when the
// variables say to export nothing, it starts nothing. The SDK's own
// errors and messages go to logger.
func startTelemetry(ctx context.Context, on bool, getenv func(string) string, logger *slog.Logger) (*telemetry, error) {
	if !on {
		return &telemetry{}, nil
	}
	exports, err := otelExports(getenv)
	if err != nil || !exports {
		return &telemetry{}, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", otelServiceName),
			attribute.String("service.version", moduleVersion()),
		),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("the OpenTelemetry resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	otel.SetLogger(logr.FromSlogHandler(logger.Handler()))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("execgate: OpenTelemetry export", "error", err.Error())
	}))
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("the OTLP exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &telemetry{tp: tp}, nil
}

// auditors returns what the gate is to hand its Events to: a span sink
// when spans are exported.
func (t *telemetry) auditors() []execgate.Auditor {
	if t.tp == nil {
		return nil
	}
	return []execgate.Auditor{otelaudit.New(t.tp)}
}

// shutdown exports the spans still held, for at most otelShutdownGrace,
// and stops the export.
func (t *telemetry) shutdown(logger *slog.Logger) {
	if t.tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), otelShutdownGrace)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		logger.Warn("execgate: the last OpenTelemetry spans could not be exported", "error", err.Error())
	}
}
