package provider_test

import (
	"net/http"
	"sync"
)

func wrapCount(h http.Handler, mu *sync.Mutex, inFlight, peak *int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*inFlight++
		*peak = max(*peak, *inFlight)
		mu.Unlock()
		defer func() {
			mu.Lock()
			*inFlight--
			mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}
