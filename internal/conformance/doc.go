// Package conformance holds the tests that hold statuscheck's models to a
// real apiserver (internal/kubetest): every native trace under
// testdata/traces and every counterexample --explore writes for the
// handshake bundles is played step by step on the server, and after every
// step the model's generation, the conditions the gate reads and the
// gate's verdicts must equal what the real objects give. The rules whose
// messages make a claim about the apiserver are checked there too, and the
// built statuscheck record records scenarios played on the server. It has
// no code outside its tests.
package conformance
