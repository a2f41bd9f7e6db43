package flightsql

// locationURI is the Flight location of a data node at addr (HOST:PORT): grpc+tls:// when this
// server serves TLS, since a cluster's processes serve alike, grpc:// otherwise.
func (s *Server) locationURI(addr string) string {
	if s.opts.TLS != nil {
		return "grpc+tls://" + addr
	}
	return "grpc://" + addr
}
