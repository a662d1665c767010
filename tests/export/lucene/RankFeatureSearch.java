import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FeatureField;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.store.ByteBuffersDirectory;

/**
 * Loads a crawlkit export into Lucene the way the search servers do, then searches it.
 *
 * <p>Elasticsearch bulk files ({"index": ...} action line, then the document) index the
 * rank_feature field "boost" as {@code FeatureField("_feature", "boost", v)}; Solr update files
 * ({"add": {"doc": ...}}) index the RankField "boost_rank" as
 * {@code FeatureField("_rank_", "boost_rank", v)}: the same Lucene calls those servers make.
 * The query is a title term that must match, plus a should-clause saturation feature query,
 * as Elasticsearch's rank_feature query and Solr's {!rank} parser build it.
 *
 * <p>Usage: java -cp '.jars/lucene/*' RankFeatureSearch.java TERM FILE...; prints
 * "text|ranked TAB id TAB score" lines: the hits of the term alone, then with the feature.
 */
public class RankFeatureSearch {
  public static void main(String[] args) throws Exception {
    ObjectMapper json = new ObjectMapper();
    ByteBuffersDirectory dir = new ByteBuffersDirectory();
    String featureField = null;
    String feature = null;
    try (IndexWriter writer = new IndexWriter(dir, new IndexWriterConfig(new StandardAnalyzer()))) {
      for (int i = 1; i < args.length; i++) {
        try (BufferedReader in = Files.newBufferedReader(Path.of(args[i]))) {
          String line;
          while ((line = in.readLine()) != null) {
            JsonNode command = json.readTree(line);
            Document doc = new Document();
            JsonNode source;
            if (command.has("index")) {
              source = json.readTree(in.readLine());
              featureField = "_feature";
              feature = "boost";
              doc.add(new StringField("id", command.get("index").get("_id").asText(), Field.Store.YES));
            } else if (command.has("add")) {
              source = command.get("add").get("doc");
              featureField = "_rank_";
              feature = "boost_rank";
              doc.add(new StringField("id", source.get("id").asText(), Field.Store.YES));
            } else {
              throw new IllegalArgumentException("not an index or add command: " + line);
            }
            doc.add(new TextField("title", source.path("title").asText(""), Field.Store.NO));
            doc.add(new FeatureField(featureField, feature, (float) source.get(feature).asDouble()));
            writer.addDocument(doc);
          }
        }
      }
    }
    try (DirectoryReader reader = DirectoryReader.open(dir)) {
      IndexSearcher searcher = new IndexSearcher(reader);
      Query text = new TermQuery(new Term("title", args[0]));
      Query ranked = new BooleanQuery.Builder()
          .add(text, Occur.MUST)
          .add(FeatureField.newSaturationQuery(featureField, feature), Occur.SHOULD)
          .build();
      print(searcher, "text", text);
      print(searcher, "ranked", ranked);
    }
  }

  static void print(IndexSearcher searcher, String label, Query query) throws Exception {
    for (ScoreDoc hit : searcher.search(query, 10).scoreDocs) {
      String id = searcher.storedFields().document(hit.doc).get("id");
      System.out.println(label + "\t" + id + "\t" + hit.score);
    }
  }
}
