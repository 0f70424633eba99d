package exchange

import "io"

// ReadAtMost reads r to its end, at most limit bytes, into one buffer of
// the declared size (size < 0: unknown), as io.ReadAll of an
// io.LimitReader(r, limit) does.
func ReadAtMost(r io.Reader, size, limit int64) ([]byte, error) {
	n := int64(512)
	if size >= 0 && size < limit {
		n = size + 1 // room for the read that finds the end
	}
	b := make([]byte, 0, n)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		buf := b[len(b):cap(b)]
		if left := limit - int64(len(b)); int64(len(buf)) > left {
			buf = buf[:left]
		}
		m, err := r.Read(buf)
		b = b[:len(b)+m]
		switch {
		case err == io.EOF || int64(len(b)) >= limit:
			return b, nil
		case err != nil:
			return b, err
		}
	}
}
