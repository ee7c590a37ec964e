package testutil

import (
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes what a client needs to reach a test server as
// the client c is (host, CA, server name, token or client certificate),
// for a subprocess: the real statuscheck binary.
func WriteKubeconfig(c *rest.Config, dir string) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData, TLSServerName: c.ServerName}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: c.BearerToken, ClientCertificateData: c.CertData, ClientKeyData: c.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test", Namespace: "default"}
	kc.CurrentContext = "test"
	p := filepath.Join(dir, "kubeconfig")
	return p, clientcmd.WriteToFile(*kc, p)
}
