// Package client is the Go SDK of chaperone's HTTP API: a typed call for every endpoint,
// errors that carry the server's RFC 9457 problem, creates that are safe to retry,
// waiting that reports progress, and downloads that resume.
//
// Every piece of work is an asynchronous job. Submit one with CreatePrediction,
// CreateDesign or CreateEmbedding; Wait until it ends; read its Results; save its files
// with DownloadArchive or DownloadArtifact:
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithAPIKey(os.Getenv("CHAPERONE_API_KEY")))
//	j, err := c.CreatePrediction(ctx, &client.PredictRequest{Model: "boltz2", Sequence: "MKTAYIAKQR"}, nil)
//	j, err = c.Wait(ctx, j.ID, func(j *client.Job) { log.Println(j.Status, j.Stage) })
//	if j.Status != client.Succeeded { ... j.Error says why ... }
//	res, err := c.Results(ctx, j.ID)
//	err = c.DownloadArchive(ctx, j.ID, "results.zip")
//
// # Errors
//
// An error answer of the server is an *Error with the problem's Status, Type (see Slug),
// Title, Detail, Instance and RequestID, and RetryAfter for a 429 or 503; use errors.As,
// StatusCode or IsNotFound and its siblings. A call that got no answer at all is a
// *ConnectionError. A job that failed is not an error of the call that reports it: look
// at Job.Status and Job.Error.
//
// # Retries
//
// A call is repeated (see Retry) after a 429 or 503, waiting out the Retry-After the
// server asked for; after a 502 or 504 from a proxy; and when the connection could not
// be made or broke. Every call of the package is safe to repeat: a create carries an
// Idempotency-Key, generated unless CreateOptions gives one, and the same key goes with
// every attempt of the call, so the server makes one job however many attempts reach
// it.
//
// # Waiting
//
// Wait and FollowLogs long-poll the job with Prefer: wait: the server answers the moment
// the job ends, so neither adds latency, and neither polls faster than once a second.
//
// # Downloads
//
// DownloadArchive and DownloadArtifact stream to a partial file beside the destination
// and resume after a broken connection, in the same call or a later one, with a Range
// request guarded by If-Range and the ETag of the first answer, so that the bytes of two
// versions of a file are never joined.
//
// The package imports nothing of chaperone's: a program that talks to a chaperone server
// needs only this package and the standard library.
package client
