"""Generated gRPC and protobuf stubs of proto/quarry/v1 (make proto). Do not edit."""
