// Command extproc-client plays the gateway's part in front of an endpoint picker (EPP), for the
// end-to-end tests: for each request it reads it opens an Envoy external-processing stream to the
// EPP, sends the request's headers and then its body, as Envoy does, and reports what the EPP
// answered: the endpoint it picked (the x-gateway-destination-endpoint header it sets) or the
// immediate response it sent instead (HTTP status and body), with every header it set. With
// forwarding on, it then sends the request, with those headers, to the picked endpoint and hands
// the endpoint's response back to the EPP, as Envoy does, so the model servers carry the load the
// EPP routes.
//
// Before it reads anything it waits for the EPP's gRPC health check to serve (the EPP serves once
// it has read its InferencePool) and prints {"event":"ready"}.
//
// Input, one JSON object a line on stdin; each request starts as soon as its line is read:
//
//	{"id": "a1", "objective": "chat-p1-high", "fairness": "team-a", "model": "chat",
//	 "prompt": "hello", "max_tokens": 4, "forward": true, "forward_to": "127.0.0.1:9000",
//	 "headers": {"x-client": "v"}}
//
// Output, one JSON object a line on stdout, written as things happen:
//
//	{"event":"answered","id":"a1","seq":1,"sent":..,"answered":..,"endpoint":"127.0.0.2:8000",
//	 "headers":{"x-gateway-destination-endpoint":"127.0.0.2:8000",...},"removed":[...]}
//	{"event":"answered","id":"a2","seq":2,"sent":..,"answered":..,"status":503,"body":"..."}
//	{"event":"forwarded","id":"a1","forward_status":200,"done":..}
//
// Times are Unix seconds. "seq" numbers the answers in the order they arrived. At the end of
// the input the program waits for every request and exits.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/grpclog"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const (
	objectiveHeader   = "x-gateway-inference-objective"
	fairnessHeader    = "x-gateway-inference-fairness-id"
	destinationHeader = "x-gateway-destination-endpoint"
	requestIDHeader   = "x-request-id"
)

// request is one input line.
type request struct {
	ID        string `json:"id"`
	Objective string `json:"objective,omitempty"`
	Fairness  string `json:"fairness,omitempty"`
	Model     string `json:"model"`
	Prompt    string `json:"prompt"`
	MaxTokens int    `json:"max_tokens,omitempty"`
	Forward   *bool  `json:"forward,omitempty"`
	// ForwardTo is where the picked endpoint's process listens, when that is not the endpoint's
	// own address (several stand-in pods served by processes on one host).
	ForwardTo string `json:"forward_to,omitempty"`
	// Headers are the client's own, sent to the EPP (and on to the endpoint) as it sent them.
	Headers map[string]string `json:"headers,omitempty"`
}

// event is one output line.
type event struct {
	Event         string            `json:"event"`
	ID            string            `json:"id,omitempty"`
	Seq           int64             `json:"seq,omitempty"`
	Sent          float64           `json:"sent,omitempty"`
	Answered      float64           `json:"answered,omitempty"`
	Endpoint      string            `json:"endpoint,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	Removed       []string          `json:"removed,omitempty"`
	Status        int               `json:"status,omitempty"`
	Body          string            `json:"body,omitempty"`
	Error         string            `json:"error,omitempty"`
	ForwardStatus int               `json:"forward_status,omitempty"`
	Done          float64           `json:"done,omitempty"`
	At            float64           `json:"at,omitempty"`
}

type client struct {
	extproc extprocv3.ExternalProcessorClient
	http    *http.Client
	forward bool
	timeout time.Duration
	seq     atomic.Int64
	outMu   sync.Mutex
	out     *bufio.Writer
}

func unix(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}

func (c *client) emit(e event) {
	line, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	c.outMu.Lock()
	defer c.outMu.Unlock()
	c.out.Write(append(line, '\n'))
	c.out.Flush()
}

func header(key, value string) *corev3.HeaderValue {
	return &corev3.HeaderValue{Key: key, RawValue: []byte(value)}
}

func (r request) body() ([]byte, error) {
	body := map[string]any{"model": r.Model, "prompt": r.Prompt, "temperature": 0}
	if r.MaxTokens > 0 {
		// The simulator generates exactly max_tokens tokens when told to ignore end of sequence.
		body["max_tokens"] = r.MaxTokens
		body["ignore_eos"] = true
	}
	return json.Marshal(body)
}

// run drives one request through the EPP and, if asked, to the endpoint it picked.
func (c *client) run(r request) {
	body, err := r.body()
	if err != nil {
		c.emit(event{Event: "answered", ID: r.ID, Error: err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	sent := time.Now()
	answered := event{Event: "answered", ID: r.ID, Sent: unix(sent)}
	stream, err := c.extproc.Process(ctx)
	if err != nil {
		answered.Error = "open stream: " + err.Error()
		c.emit(answered)
		return
	}
	headers := []*corev3.HeaderValue{
		header(":method", "POST"),
		header(":path", "/v1/completions"),
		header(":authority", "gateway"),
		header(":scheme", "http"),
		header("content-type", "application/json"),
		header("content-length", strconv.Itoa(len(body))),
		header(requestIDHeader, r.ID),
	}
	if r.Objective != "" {
		headers = append(headers, header(objectiveHeader, r.Objective))
	}
	if r.Fairness != "" {
		headers = append(headers, header(fairnessHeader, r.Fairness))
	}
	for key, value := range r.Headers {
		headers = append(headers, header(key, value))
	}
	err = stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: headers}},
	}})
	if err == nil {
		err = stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
			RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true},
		}})
	}
	if err != nil {
		answered.Error = "send request: " + err.Error()
		c.emit(answered)
		return
	}
	// The EPP answers the headers once it has the body: with the headers to set (the picked
	// endpoint among them), then the body, possibly rewritten; or with an immediate response.
	first, err := stream.Recv()
	answered.Answered = unix(time.Now())
	answered.Seq = c.seq.Add(1)
	if err != nil {
		answered.Error = "receive: " + err.Error()
		c.emit(answered)
		return
	}
	switch response := first.Response.(type) {
	case *extprocv3.ProcessingResponse_ImmediateResponse:
		answered.Status = int(response.ImmediateResponse.GetStatus().GetCode())
		answered.Body = string(response.ImmediateResponse.GetBody())
		c.emit(answered)
		return
	case *extprocv3.ProcessingResponse_RequestHeaders:
		answered.Headers = map[string]string{}
		answered.Removed = response.RequestHeaders.GetResponse().GetHeaderMutation().GetRemoveHeaders()
		for _, set := range response.RequestHeaders.GetResponse().GetHeaderMutation().GetSetHeaders() {
			answered.Headers[set.GetHeader().GetKey()] = string(set.GetHeader().GetRawValue())
			if set.GetHeader().GetKey() == destinationHeader {
				answered.Endpoint = string(set.GetHeader().GetRawValue())
			}
		}
	default:
		answered.Error = fmt.Sprintf("unexpected first response %T", first.Response)
	}
	c.emit(answered)
	forward := c.forward
	if r.Forward != nil {
		forward = *r.Forward
	}
	if answered.Endpoint == "" || !forward {
		_ = stream.CloseSend()
		return
	}
	rewritten, err := requestBody(stream)
	if err != nil {
		c.emit(event{Event: "forwarded", ID: r.ID, Error: err.Error(), Done: unix(time.Now())})
		return
	}
	if len(rewritten) > 0 {
		body = rewritten
	}
	target := answered.Endpoint
	if r.ForwardTo != "" {
		target = r.ForwardTo
	}
	// Envoy forwards the client's headers with the EPP's mutations applied.
	forwarded := map[string]string{}
	for key, value := range r.Headers {
		forwarded[key] = value
	}
	for _, key := range answered.Removed {
		delete(forwarded, key)
	}
	for key, value := range answered.Headers {
		forwarded[key] = value
	}
	c.emit(c.forwardTo(ctx, stream, r.ID, target, forwarded, body))
}

// requestBody reads the EPP's body responses to the request; the body as it should go on.
func requestBody(stream extprocv3.ExternalProcessor_ProcessClient) ([]byte, error) {
	var out []byte
	for {
		message, err := stream.Recv()
		if err != nil {
			return nil, fmt.Errorf("receive body: %w", err)
		}
		response, ok := message.Response.(*extprocv3.ProcessingResponse_RequestBody)
		if !ok {
			return nil, fmt.Errorf("unexpected response %T while reading the body", message.Response)
		}
		mutation := response.RequestBody.GetResponse().GetBodyMutation()
		if streamed := mutation.GetStreamedResponse(); streamed != nil {
			out = append(out, streamed.GetBody()...)
			if streamed.GetEndOfStream() {
				return out, nil
			}
			continue
		}
		return append(out, mutation.GetBody()...), nil
	}
}

// forwardTo sends the request, with the headers the EPP set (as Envoy applies them), to the
// endpoint, and the endpoint's response back to the EPP.
func (c *client) forwardTo(ctx context.Context, stream extprocv3.ExternalProcessor_ProcessClient, id, endpoint string, set map[string]string, body []byte) event {
	done := event{Event: "forwarded", ID: id}
	post, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+endpoint+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		done.Error = err.Error()
		done.Done = unix(time.Now())
		return done
	}
	for key, value := range set {
		// Pseudo-headers and the length are the HTTP client's to write.
		if !strings.HasPrefix(key, ":") && !strings.EqualFold(key, "content-length") {
			post.Header.Set(key, value)
		}
	}
	post.Header.Set("Content-Type", "application/json")
	post.Header.Set(requestIDHeader, id)
	response, err := c.http.Do(post)
	if err != nil {
		done.Error = "forward: " + err.Error()
		done.Done = unix(time.Now())
		return done
	}
	answer, err := io.ReadAll(response.Body)
	response.Body.Close()
	done.ForwardStatus = response.StatusCode
	done.Done = unix(time.Now())
	if err != nil {
		done.Error = "read response: " + err.Error()
		return done
	}
	// The response goes through the EPP as through Envoy: headers, then the whole body.
	err = stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
			header(":status", strconv.Itoa(response.StatusCode)),
			header("content-type", response.Header.Get("Content-Type")),
		}}},
	}})
	if err == nil {
		_, err = stream.Recv()
	}
	if err == nil {
		err = stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
			ResponseBody: &extprocv3.HttpBody{Body: answer, EndOfStream: true},
		}})
	}
	for err == nil {
		var message *extprocv3.ProcessingResponse
		message, err = stream.Recv()
		if err != nil {
			break
		}
		streamed := message.GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse()
		if streamed == nil || streamed.GetEndOfStream() {
			break
		}
	}
	if err != nil {
		done.Error = "response through the EPP: " + err.Error()
	}
	_ = stream.CloseSend()
	return done
}

// waitReady polls the EPP's gRPC health service until it serves. Each attempt dials anew, so a
// connection refused before the EPP listens leaves no reconnect backoff behind.
func waitReady(address string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		status, err := checkHealth(address)
		if err == nil && status == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = status.String()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the EPP's health check at %s did not serve within %s (last: %s)", address, timeout, last)
}

// waitListening waits until the ext-proc port accepts a TCP connection.
func waitListening(address string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		connection, err := net.DialTimeout("tcp", address, time.Second)
		if err == nil {
			return connection.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the EPP's ext-proc port %s did not listen within %s: %w", address, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkHealth asks the EPP's health service once, on a connection of its own.
func checkHealth(address string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	connection, err := grpc.NewClient("passthrough:///"+address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN, err
	}
	defer connection.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	response, err := healthpb.NewHealthClient(connection).Check(ctx, &healthpb.HealthCheckRequest{Service: extprocv3.ExternalProcessor_ServiceDesc.ServiceName})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN, err
	}
	return response.GetStatus(), nil
}

func main() {
	eppAddress := flag.String("epp", "127.0.0.1:9002", "the EPP's ext-proc gRPC address")
	useTLS := flag.Bool("tls", false, "call ext-proc over TLS without verifying the EPP's certificate, "+
		"as Envoy AI Gateway, kgateway and agentgateway do with the certificate the EPP makes itself")
	healthAddress := flag.String("health", "127.0.0.1:9003", "the EPP's gRPC health address")
	readyTimeout := flag.Duration("ready-timeout", 60*time.Second, "how long to wait for the EPP to serve")
	forward := flag.Bool("forward", false, "send each request on to the endpoint the EPP picked")
	timeout := flag.Duration("timeout", 120*time.Second, "the longest one request may take, end to end")
	flag.Parse()
	// gRPC's own warnings (each refused connection while the EPP starts) only hide real errors.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, os.Stderr))

	c := &client{
		http:    &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 64}},
		forward: *forward,
		timeout: *timeout,
		out:     bufio.NewWriter(os.Stdout),
	}
	if err := waitReady(*healthAddress, *readyTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	// The health service serves before ext-proc listens; over TLS (the EPP first makes its
	// certificate, an RSA-4096 key) by a second or more.
	if err := waitListening(*eppAddress, *readyTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	transport := insecure.NewCredentials()
	if *useTLS {
		// The EPP's own certificate names no host and no CA signs it: nothing to verify against.
		transport = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // as the gateways do
	}
	connection, err := grpc.NewClient(*eppAddress, grpc.WithTransportCredentials(transport))
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	defer connection.Close()
	c.extproc = extprocv3.NewExternalProcessorClient(connection)
	c.emit(event{Event: "ready", At: unix(time.Now())})

	var running sync.WaitGroup
	lines := bufio.NewScanner(os.Stdin)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		if len(bytes.TrimSpace(lines.Bytes())) == 0 {
			continue
		}
		var r request
		if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
			c.emit(event{Event: "answered", Error: "bad input line: " + err.Error()})
			continue
		}
		running.Add(1)
		go func() {
			defer running.Done()
			c.run(r)
		}()
	}
	running.Wait()
}
