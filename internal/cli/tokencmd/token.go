// Package tokencmd holds taskctl's token commands (admin): create, which
// stores a bearer token in the cluster and prints it once, or with
// --offline makes one for a node's --tokens-file without calling a node;
// list; and revoke. Its calls go through pkg/client, the rules of token
// ids, verbs and scopes are pkg/tokens'. No lock.
package tokencmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/command"
	"github.com/taskd/taskd/internal/cli/render"
	"github.com/taskd/taskd/pkg/client"
	"github.com/taskd/taskd/pkg/tokens"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Create defines "token create": it stores a token through the
// TokenService and prints its bearer once; with --offline it makes a token
// locally and prints it with the line that grants it in a node's
// --tokens-file (which holds only the secret's SHA-256).
func Create(fs *flag.FlagSet) command.Action {
	id := fs.String("id", "", "`ID` of the token (letters, digits, _ and -); default a random one")
	verbs := fs.String("verbs", "", "comma-separated `VERBS` among "+strings.Join(tokens.Verbs, ", ")+" (required)")
	identities := fs.String("identities", "", "comma-separated identities and prefixes ending in * (`SCOPES`); empty: all identities")
	description := fs.String("description", "", "free `TEXT` for people (stored tokens only)")
	offline := fs.Bool("offline", false, "make the token here, for a node's --tokens-file, without calling a node")
	return func(e *command.Env, args []string) error {
		if err := cmdline.NoArgs(args); err != nil {
			return err
		}
		if *verbs == "" {
			return cmdline.Usagef("--verbs is required")
		}
		vs := strings.Split(*verbs, ",")
		if err := tokens.ValidateVerbs(vs); err != nil {
			return cmdline.Usagef("--verbs: %v", err)
		}
		var scopes []string
		if *identities != "" {
			scopes = strings.Split(*identities, ",")
			if err := tokens.ValidateScopes(scopes); err != nil {
				return cmdline.Usagef("--identities: %v", err)
			}
		}
		if *id != "" {
			if err := tokens.ValidateID(*id); err != nil {
				return cmdline.Usagef("--id: %v", err)
			}
		}
		if *offline {
			if *description != "" {
				return cmdline.Usagef("--description is stored with the token in the cluster: not with --offline")
			}
			tid := *id
			if tid == "" {
				tid = tokens.NewID()
			}
			secret := tokens.NewSecret()
			fmt.Fprintf(e.Stdout, "token: %s.%s\n", tid, secret)
			fmt.Fprintf(e.Stdout, "tokens-file line: %s\n", tokens.FileLine(tid, secret, vs, scopes))
			fmt.Fprintln(e.Stderr, "taskctl: the token is shown only now; add the line to each node's --tokens-file and send the nodes SIGHUP")
			return nil
		}
		return command.Call(e, func(ctx context.Context, c *client.Client) (*taskdv1.CreateTokenResponse, error) {
			tok, bearer, err := c.CreateToken(ctx, client.TokenSpec{ID: *id, Verbs: vs, Identities: scopes, Description: *description})
			if err != nil {
				return nil, err
			}
			return &taskdv1.CreateTokenResponse{Token: tok.Proto, Bearer: bearer}, nil
		}, func(resp *taskdv1.CreateTokenResponse) error {
			fmt.Fprintf(e.Stdout, "token: %s\n", resp.GetBearer())
			fmt.Fprintln(e.Stderr, "taskctl: the token is shown only now; the cluster keeps only its hash")
			return nil
		})
	}
}

// List defines "token list".
func List(*flag.FlagSet) command.Action {
	return command.List(func(ctx context.Context, c *client.Client) (*taskdv1.ListTokensResponse, error) {
		toks, err := c.Tokens(ctx)
		return &taskdv1.ListTokensResponse{Tokens: command.Protos(toks, func(t client.Token) *taskdv1.Token { return t.Proto })}, err
	}, func(w io.Writer, resp *taskdv1.ListTokensResponse) error {
		return render.WriteTokensTable(w, resp.GetTokens())
	})
}

// Revoke defines "token revoke": it says so, -o json or not.
func Revoke(*flag.FlagSet) command.Action {
	return func(e *command.Env, args []string) error {
		if len(args) != 1 {
			return cmdline.Usagef("want one token ID")
		}
		err := e.Do(func(ctx context.Context, c *client.Client) error { return c.RevokeToken(ctx, args[0]) })
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "revoked %s\n", args[0])
		return nil
	}
}
